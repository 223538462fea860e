import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Links that outlive the process (docs/RESTORATION.md, "Links that outlive the agent"):
/// every link's socket is kept in a `DescriptorStore` (systemd's) from the moment the
/// transport has it, the next process adopts what it is handed before it re-asserts
/// anything, and ending a link removes it from the store, since closing our copy no
/// longer ends it.
extension KernelTransport {
    /// The store name of a link: `att-<link id>-<role>`. No address (systemd refuses `:` in a
    /// name): the peer is read back from the socket.
    static func storeName(of id: LinkID, role: LinkRole) -> String { "att-\(id.rawValue)-\(role.rawValue)" }

    /// The link id and role a store name carries; nil for a name this transport never made.
    static func parseStoreName(_ name: String) -> (LinkID, LinkRole)? {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "att", let id = UInt64(parts[1]), let role = LinkRole(rawValue: String(parts[2]))
        else { return nil }
        return (LinkID(id), role)
    }

    /// At start, before anything is asked of the kernel: each handed socket whose link is
    /// still up (its peer can be read) becomes a link we hold, under its old id, waiting for
    /// a manager to claim it (`connectedLinks`); it is read only once claimed, so nothing
    /// the peer sent meanwhile is lost. The rest is closed and removed from the store. New
    /// links' ids start above every id of this boot (the monotonic clock, in milliseconds),
    /// so a new link is never taken for one a predecessor preserved.
    func adoptHandedLinks() {
        guard let store = descriptorStore else { return }
        var highest = UInt64(max(0, posixLoop.now.nanoseconds / 1_000_000))
        for handed in store.takeHanded() {
            guard let (id, role) = Self.parseStoreName(handed.name) else {
                discardHanded(handed, because: "not a link's name")
                continue
            }
            let peer: BluetoothAddress
            do { peer = try sockets.peer(of: handed.fileDescriptor) } catch {
                discardHanded(handed, because: "its link ended while the agent was gone (\(error.message))")
                continue
            }
            let link = KernelLink(id: id, fileDescriptor: handed.fileDescriptor, peer: peer, role: role,
                                  maximumTransmissionUnit: sockets.maximumTransmissionUnit(handed.fileDescriptor),
                                  loop: posixLoop, transport: self)
            link.storeName = handed.name
            links.append(link)
            adoptedLinks.append(link.id)
            highest = max(highest, id.rawValue)
        }
        linkCount = highest
    }

    /// Adoption runs in `init`, before anyone can set `onFailure`: what it could not adopt
    /// is kept in `adoptionFailures` for the caller to report.
    private func discardHanded(_ handed: HandedDescriptor, because why: String) {
        Syscalls.close(handed.fileDescriptor)
        forgetStored(name: handed.name)
        adoptionFailures.append(KernelError(.system, "a descriptor the service manager kept (\(handed.name)) was closed: \(why)"))
    }

    /// Keeps a new link's socket in the store; a store that refuses is reported: the link
    /// then ends with this process, as it did before the store.
    func keepInStore(_ link: KernelLink, fileDescriptor: CInt) {
        guard let store = descriptorStore else { return }
        let name = Self.storeName(of: link.id, role: link.role)
        do {
            try store.keep(fileDescriptor, name: name)
            link.storeName = name
        } catch {
            onFailure?(KernelError(.system, "\(link.id) to \(link.peer) not kept in the service manager's descriptor "
                                   + "store (\(error)): it ends if this process dies", errno: error.errno))
        }
    }

    /// The link is ending (or was never wanted): its stored copy must go, or it would hold
    /// the link up after us. Said before our own copy closes.
    func forgetStored(_ link: KernelLink) {
        guard let name = link.storeName else { return }
        link.storeName = nil
        forgetStored(name: name)
    }

    private func forgetStored(name: String) {
        do { try descriptorStore?.remove(name: name) } catch {
            // PID 1 still drops it once the link is gone (POLLHUP): the link ends, later.
            onFailure?(KernelError(.system, "could not remove \(name) from the descriptor store (\(error)); "
                                   + "the service manager drops it when its link ends", errno: error.errno))
        }
    }

    /// `close()` with a store (a deliberate stop): each link is removed from the store and
    /// disconnected (mgmt Disconnect), so its peer sees it end now — the store would hold it
    /// until the unit stopped, and the kernel's idle-link timeout after that. Waits for the
    /// kernel's answers with the rest of `close()`'s commands. Without a store links are
    /// dropped as before (their sockets closed; the kernel ends them).
    func endLinksForClose() -> [() -> Bool] {
        guard descriptorStore != nil else {
            for link in links { link.drop() }
            links = []
            return []
        }
        var waits: [() -> Bool] = []
        for link in links {
            forgetStored(link)
            link.drop()
            guard isAttached, mgmt.isOpen else { continue }
            let answer = Answer()
            send(.disconnect(link.peer)) { _ in answer.came = true }  // Not Connected: it went by itself
            waits.append { answer.came }
        }
        links = []
        return waits
    }
}

/// Whether the kernel has answered a command `close()` waits for.
final class Answer {
    var came = false
}
