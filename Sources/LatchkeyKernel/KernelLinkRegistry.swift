import LatchkeyTransport

/// What `KernelLinkRegistry` needs of a link: who it is to, and the timing the controller reports for it.
protocol RegisteredLink: AnyObject {
    var id: LinkID { get }
    var peer: BluetoothAddress { get }
    var role: LinkRole { get }
    var isConnected: Bool { get }
    /// The controller's handle of the link (an LE Connection Update names only it).
    var connectionHandle: UInt16? { get }
    func noteTiming(handle: UInt16?, interval: Duration?)
}

extension KernelLink: RegisteredLink {}

/// The transport's open links: each ATT bearer we hold a socket for, by id, peer and
/// controller handle, and the ids new links get. A link's id is never reused within a boot:
/// ids start above every id a predecessor kept (`adopt`). It owns the list, the id counter
/// and which links were adopted; the transport decides when a link comes and goes.
final class KernelLinkRegistry<Link: RegisteredLink> {
    private var open: [Link] = []
    private var lastID: UInt64 = 0
    private var adoptedIDs: [LinkID] = []

    /// Every link held, connected or ending.
    var all: [Link] { open }
    /// The links still connected (what the managers see).
    var connected: [Link] { open.filter(\.isConnected) }
    /// The links a predecessor kept that were adopted at start.
    var adopted: [LinkID] { adoptedIDs }

    /// The id of the next new link.
    func nextID() -> LinkID {
        lastID += 1
        return LinkID(lastID)
    }

    /// The links a predecessor kept become ours under their ids; new ids start above `highestID`.
    func adopt(_ links: [Link], highestID: UInt64) {
        open += links
        adoptedIDs += links.map(\.id)
        lastID = max(lastID, highestID)
    }

    func add(_ link: Link) { open.append(link) }

    /// Returns whether `link` was held.
    @discardableResult
    func remove(_ link: Link) -> Bool {
        let before = open.count
        open.removeAll { $0 === link }
        return open.count != before
    }

    /// Empties the registry (the transport closes); returns what it held, for the caller to end.
    func removeAll() -> [Link] {
        defer { open = [] }
        return open
    }

    /// Whether a link to `peer` is held.
    func holds(_ peer: BluetoothAddress) -> Bool { open.contains { $0.peer == peer } }

    /// Whether a central is linked to us (the controller stopped advertising for it).
    var hasPeripheralLink: Bool { open.contains { $0.role == .peripheral } }

    /// The peer (as the HCI watch names it, its 48-bit value) of the link the controller calls `handle`.
    func peer(ofHandle handle: UInt16) -> UInt64? { open.first { $0.connectionHandle == handle }?.peer.value }

    /// The controller reported `peer`'s connection timing: every link to it learns it.
    func noteTiming(peer: UInt64, handle: UInt16?, interval: Duration?) {
        for link in open where link.peer.value == peer { link.noteTiming(handle: handle, interval: interval) }
    }
}
