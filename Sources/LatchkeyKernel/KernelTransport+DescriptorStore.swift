import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Links that outlive the process, the transport's side (`LinkKeeper` keeps them in the store).
extension KernelTransport {
    /// At start, before anything is asked of the kernel: the links a predecessor kept become
    /// links we hold under their old ids, waiting for a manager to claim them; new links' ids
    /// start above every id of this boot.
    func adoptHandedLinks() {
        guard linkKeeper.isKeeping else { return }
        let (adopted, highest) = linkKeeper.adopt(now: posixLoop.now, sockets: sockets) { id, fd, peer, role in
            KernelLink(id: id, fileDescriptor: fd, peer: peer, role: role,
                       maximumTransmissionUnit: sockets.maximumTransmissionUnit(fd), loop: posixLoop, transport: self)
        }
        links.adopt(adopted, highestID: highest)
    }

    /// The link is ending (or was never wanted): its stored copy must go, before our own closes.
    func forgetStored(_ link: KernelLink) { linkKeeper.forget(link) }

    /// `close()` with a store (a deliberate stop): each link is removed from the store and
    /// disconnected (mgmt Disconnect), so its peer sees it end now — the store would hold it
    /// until the unit stopped, and the kernel's idle-link timeout after that. Waits for the
    /// kernel's answers with the rest of `close()`'s commands. Without a store links are
    /// dropped as before (their sockets closed; the kernel ends them).
    func endLinksForClose() -> [() -> Bool] {
        guard linkKeeper.isKeeping else {
            for link in links.removeAll() { link.drop() }
            return []
        }
        var waits: [() -> Bool] = []
        for link in links.removeAll() {
            forgetStored(link)
            link.drop()
            guard isAttached, mgmt.isOpen else { continue }
            let answer = Answer()
            send(.disconnect(link.peer)) { _ in answer.came = true }  // Not Connected: it went by itself
            waits.append { answer.came }
        }
        return waits
    }
}

/// Whether the kernel has answered a command `close()` waits for.
final class Answer {
    var came = false
}
