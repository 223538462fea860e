import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Links that outlive the process (docs/RESTORATION.md, "Links that outlive the agent"):
/// every link's socket is kept in a `DescriptorStore` (systemd's) from the moment the
/// transport has it, with a sealed memfd of its state beside it (`KeptLinkState`); the next
/// process adopts what it is handed before it re-asserts anything, and ending a link removes
/// it from the store, since closing our copy no longer ends it. It owns the store and what
/// adoption could not adopt; the transport holds the links.
final class LinkKeeper {
    private let store: (any DescriptorStore)?
    private var failures: [KernelError] = []
    /// A store that refused a new link or a removal (after adoption; adoption's own are in
    /// `adoptionFailures`, since it runs before anyone can listen).
    var onFailure: ((KernelError) -> Void)?

    init(store: (any DescriptorStore)?) { self.store = store }

    /// Whether links are kept at all (nil store: links end with the process, as they always did).
    var isKeeping: Bool { store != nil }

    /// What was handed back but could not be adopted (closed and removed from the store).
    var adoptionFailures: [KernelError] { failures }

    /// The store name of a link's socket: `att-<link id>-<role>`. No address (systemd
    /// refuses `:` in a name): the peer is read back from the socket.
    static func storeName(of id: LinkID, role: LinkRole) -> String { "att-\(id.rawValue)-\(role.rawValue)" }

    /// The store name of the memfd kept beside it (`KeptLinkState`): `state-<link id>-<role>`.
    static func stateName(of id: LinkID, role: LinkRole) -> String { "state-\(id.rawValue)-\(role.rawValue)" }

    /// The link id and role a store name carries, with its kind (`att` or `state`); nil for
    /// a name this transport never made.
    static func parseStoreName(_ name: String) -> (LinkID, LinkRole, isState: Bool)? {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "att" || parts[0] == "state", let id = UInt64(parts[1]),
              let role = LinkRole(rawValue: String(parts[2]))
        else { return nil }
        return (LinkID(id), role, parts[0] == "state")
    }

    /// Each handed socket whose link is still up becomes a link (`makeLink`: id, socket, peer,
    /// role) under its old id, waiting for a manager to claim it (`connectedLinks`), read only
    /// once claimed so nothing the peer sent is lost. A state file that holds a whole record of
    /// the link gives back its interval and the application's state; one that does not is
    /// reported and replaced. The rest is closed and removed. Returns the links adopted and the
    /// highest link id of this boot, above which new links' ids start (never a preserved one's).
    func adopt(now: Instant, sockets: any LinkSocketProvider,
               makeLink: (LinkID, CInt, BluetoothAddress, LinkRole) -> KernelLink) -> (links: [KernelLink], highestID: UInt64) {
        var highest = UInt64(max(0, now.nanoseconds / 1_000_000))
        guard let store else { return ([], highest) }
        var adopted: [KernelLink] = []
        var handedSockets: [(HandedDescriptor, LinkID, LinkRole)] = []
        var stateFiles: [String: HandedDescriptor] = [:]
        for handed in store.takeHanded() {
            switch Self.parseStoreName(handed.name) {
            case (let id, let role, false)?: handedSockets.append((handed, id, role))
            case (let id, let role, true)?: stateFiles[Self.storeName(of: id, role: role)] = handed
            case nil: discardHanded(handed, because: "not a link's name")
            }
        }
        for (handed, id, role) in handedSockets {
            let stateFile = stateFiles.removeValue(forKey: handed.name)
            let peer: BluetoothAddress
            do { peer = try sockets.peer(of: handed.fileDescriptor) } catch {
                let why = "its link ended while the agent was gone (\(error.message))"
                discardHanded(handed, because: why)
                if let stateFile { discardHanded(stateFile, because: why) }
                continue
            }
            let link = makeLink(id, handed.fileDescriptor, peer, role)
            link.keptSocket(as: handed.name)
            adoptState(stateFile, of: link)
            adopted.append(link)
            highest = max(highest, id.rawValue)
        }
        for leftover in stateFiles.values { discardHanded(leftover, because: "the link it was kept for is not in the store") }
        return (adopted, highest)
    }

    /// Gives an adopted link what its predecessor kept beside it, if that can be trusted: a
    /// sealed memfd of our size holding a whole record of this link (id, peer, role). What
    /// cannot is reported and the link goes on without it (a stranger's link stays a
    /// stranger's; a phone's session opens again at its next command).
    private func adoptState(_ handed: HandedDescriptor?, of link: KernelLink) {
        let name = Self.stateName(of: link.id, role: link.role)
        guard let handed else {
            failures.append(KernelError(.system, "\(link.id) was kept without its state file: adopted without its "
                                                + "connection interval or session"))
            return keepNewStateFile(for: link, reporting: { self.failures.append($0) })
        }
        let file: MemoryFile
        do { file = try MemoryFile(adopting: handed.fileDescriptor, capacity: KeptLinkState.fileCapacity) } catch {
            discardHanded(handed, because: "not a link state file this agent made (\(error))")
            return keepNewStateFile(for: link, reporting: { self.failures.append($0) })
        }
        link.keepState(in: file, name: name)
        switch Result(catching: { () throws(KeptLinkState.Refusal) -> KeptLinkState in
            guard let bytes = try? file.read() else { throw .damaged }  // unreadable: as untrusted as damaged
            return try KeptLinkState.read(bytes, for: link.id, peer: link.peer, role: link.role)
        }) {
        case .success(let kept):
            link.restore(kept)  // its handle too: the controller's next update names only that
        case .failure(.neverWritten):
            break  // its predecessor died between making the file and writing it: nothing to know
        case .failure(let refusal):
            failures.append(KernelError(.system, "the state kept with \(link.id) (\(name)) is not trusted: "
                                                + "\(refusal); the link is adopted without it"))
        }
        do { try link.writeKeptState() } catch {
            failures.append(KernelError(.system, "\(name) could not be rewritten (\(error))", errno: error.errno))
        }
    }

    /// Adoption runs in `init`, before anyone can set `onFailure`: what it could not adopt
    /// is kept in `adoptionFailures` for the caller to report.
    private func discardHanded(_ handed: HandedDescriptor, because why: String) {
        Syscalls.close(handed.fileDescriptor)
        forgetStored(name: handed.name)
        failures.append(KernelError(.system, "a descriptor the service manager kept (\(handed.name)) was closed: \(why)"))
    }

    /// Makes the link's state file, writes its record and keeps it in the store beside the
    /// socket. Without it the link still outlives the process, but the next one adopts it
    /// without its connection interval and the application's state (`keep` then throws).
    private func keepNewStateFile(for link: KernelLink, reporting report: (KernelError) -> Void) {
        guard let store else { return }
        let name = Self.stateName(of: link.id, role: link.role)
        do {
            let file = try MemoryFile(name: "latchkey-\(name)", capacity: KeptLinkState.fileCapacity)
            link.keepState(in: file, name: name)
            try link.writeKeptState()
            try store.keep(file.fileDescriptor, name: name)
        } catch {
            link.keepState(in: nil, name: name)
            report(KernelError(.system, "\(link.id)'s state file not kept (\(error)): a process that adopts the link "
                               + "will not know its connection interval or session", errno: error.errno))
        }
    }

    /// Keeps a new link's socket in the store; a store that refuses is reported: the link
    /// then ends with this process, as it did before the store.
    func keep(_ link: KernelLink, fileDescriptor: CInt) {
        guard let store else { return }
        let name = Self.storeName(of: link.id, role: link.role)
        do {
            try store.keep(fileDescriptor, name: name)
            link.keptSocket(as: name)
        } catch {
            onFailure?(KernelError(.system, "\(link.id) to \(link.peer) not kept in the service manager's descriptor "
                                   + "store (\(error)): it ends if this process dies", errno: error.errno))
            return
        }
        keepNewStateFile(for: link, reporting: { self.onFailure?($0) })
    }

    /// The link is ending (or was never wanted): its stored copy must go, or it would hold
    /// the link up after us. Said before our own copy closes.
    func forget(_ link: KernelLink) {
        let kept = link.endKeeping()
        if let socket = kept.socket { forgetStored(name: socket) }
        if let state = kept.state { forgetStored(name: state) }
    }

    private func forgetStored(name: String) {
        do { try store?.remove(name: name) } catch {
            // PID 1 still drops it once the link is gone (POLLHUP): the link ends, later.
            onFailure?(KernelError(.system, "could not remove \(name) from the descriptor store (\(error)); "
                                   + "the service manager drops it when its link ends", errno: error.errno))
        }
    }
}
