import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// What `KernelLinks` needs of its coordinator.
protocol KernelLinksHost: AnyObject {
    /// Whether our controller's index is present.
    var isAttached: Bool { get }
    /// Whether a link to `peer` is wanted and the kernel has it up: a claim is due.
    func claimIsDue(_ peer: BluetoothAddress) -> Bool
    /// A link is up: offered to the application, which claims it by setting its delegate.
    func offer(_ link: KernelLink)
    /// The application claimed `link`.
    func linkClaimed(_ link: KernelLink)
    /// `link` ended under us (it is no longer held); returns the reason its peer is told.
    func linkEnded(_ link: KernelLink, errno: Errno?) -> DisconnectReason
    /// Asks the kernel to end the baseband link to `peer`; `answered` runs on its answer
    /// ("Not Connected": it went by itself). False when nothing could be sent.
    @discardableResult
    func disconnect(_ peer: BluetoothAddress, answered: @escaping () -> Void) -> Bool
    /// Something failed after the call that caused it returned.
    func report(_ error: KernelError)
}

/// The transport's links: the lock's side accepts on a listening ATT socket (`ATTListener`);
/// the phone's side claims a link the kernel made from the auto-connect list by opening its
/// ATT socket as soon as Device Connected arrives, before the kernel drops the unused link
/// (~2 s; `LinkClaims`). Each link is held (`KernelLinkRegistry`) and kept in the descriptor
/// store (`LinkKeeper`) from the moment its socket exists; the lock's links learn their
/// connection intervals from `ConnectionTimingWatch`. It owns those five and decides
/// when a claim is made and what is kept or dropped; the host says which claims are due,
/// offers each link to the application and does what a link's end means beyond it.
final class KernelLinks: KernelLinkOwner {
    weak var host: (any KernelLinksHost)?
    private let address: BluetoothAddress
    private let sockets: any LinkSocketProvider
    private let loop: PosixEventLoop
    private let listener: ATTListener
    private let claims: LinkClaims
    private let registry = KernelLinkRegistry<KernelLink>()
    private let keeper: LinkKeeper
    private let timingWatch: ConnectionTimingWatch

    init(address: BluetoothAddress, sockets: any LinkSocketProvider, hciEvents: any HCIEventSourceProvider,
         loop: PosixEventLoop, store: (any DescriptorStore)?) {
        self.address = address
        self.sockets = sockets
        self.loop = loop
        listener = ATTListener(sockets: sockets, loop: loop)
        claims = LinkClaims(sockets: sockets, loop: loop)
        keeper = LinkKeeper(store: store)
        timingWatch = ConnectionTimingWatch(events: hciEvents, loop: loop)
        keeper.onFailure = { [weak self] in self?.host?.report($0) }
        listener.onAccept = { [weak self] fd, peer in self?.up(fd, peer: peer, role: .peripheral) }
        listener.onFailure = { [weak self] in self?.host?.report($0) }
        claims.onConnected = { [weak self] fd, peer in self?.up(fd, peer: peer, role: .central) }
        claims.onFailure = { [weak self] in self?.host?.report($0) }
        timingWatch.onTiming = { [weak self] peer, handle, interval in
            self?.registry.noteTiming(peer: peer, handle: handle, interval: interval)
        }
        timingWatch.peerOfHandle = { [weak self] handle in self?.registry.peer(ofHandle: handle) }
        timingWatch.onFailure = { [weak self] in self?.host?.report($0) }
    }

    /// The links still connected (what the managers see).
    var connected: [KernelLink] { registry.connected }
    /// The links a predecessor kept that were adopted at start.
    var adopted: [LinkID] { registry.adopted }
    /// What was handed back but could not be adopted (closed and removed from the store).
    var adoptionFailures: [KernelError] { keeper.adoptionFailures }
    /// Whether a central is linked to us.
    var hasPeripheralLink: Bool { registry.hasPeripheralLink }
    /// The listener's wait after a failed accept (tests shorten it).
    var listenerBackoff: (first: Duration, cap: Duration) {
        get { listener.backoff }
        set { listener.backoff = newValue }
    }

    /// Whether a link or a claim of ours uses the baseband link to `peer`.
    func holdsSocket(for peer: BluetoothAddress) -> Bool { claims.isClaiming(peer) || registry.holds(peer) }

    func peer(ofHandle handle: UInt16) -> UInt64? { registry.peer(ofHandle: handle) }

    /// Opens the connection timing watch on controller `index` when the lock advertises;
    /// returns the refusal to report the first time it cannot be opened.
    func watchTiming(on index: MgmtIndex) -> KernelError? { timingWatch.open(index: index) }
    /// The controller went away: the watch closes (advertising opens it again).
    func closeTimingWatch() { timingWatch.close() }
    /// The controller came back: a refused watch is tried again.
    func retryTimingWatch() { timingWatch.forgetRefusal() }
    /// The handle and interval the controller last reported for `peer`'s link.
    func timing(of peer: BluetoothAddress) -> (handle: UInt16, interval: Duration)? { timingWatch.timing(of: peer) }

    /// Listens on our ATT channel; opened with the first advertising (only a peripheral
    /// takes incoming links, and a listener would also take the ATT channel of links the
    /// phone's auto-connect makes).
    func openListener() throws(KernelError) {
        guard host?.isAttached == true else { return }
        try listener.open(on: address)
    }

    /// The controller went away, or the transport closes: no listener, no claim in flight.
    func detach() {
        listener.close()
        claims.cancelAll()
    }

    /// Claims the link to `peer` on the next turn if we asked for it and it is up.
    func claimSoon(_ peer: BluetoothAddress) {
        guard host?.claimIsDue(peer) == true else { return }
        loop.execute { [weak self] in self?.claim(peer) }
    }

    private func claim(_ peer: BluetoothAddress) {
        guard let host, host.isAttached, host.claimIsDue(peer), !claims.isClaiming(peer),
              !registry.holds(peer) else { return }
        switch claims.claim(peer, from: address) {
        case .connected(let fd): up(fd, peer: peer, role: .central)
        case .connecting: break
        case .failed(let error): host.report(error)
        }
    }

    /// A link with its socket: offered to the application, which must claim it by setting
    /// its delegate; an unclaimed link is closed, and the kernel drops it.
    private func up(_ fd: CInt, peer: BluetoothAddress, role: LinkRole) {
        let link = KernelLink(id: registry.nextID(), fileDescriptor: fd, peer: peer, role: role,
                              maximumTransmissionUnit: sockets.maximumTransmissionUnit(fd), loop: loop,
                              transport: self)
        let timing = timingWatch.timing(of: peer)
        link.noteTiming(handle: timing?.handle, interval: timing?.interval)
        registry.add(link)
        keeper.keep(link, fileDescriptor: fd)
        host?.offer(link)
        if link.delegate == nil {
            registry.remove(link)
            forgetStored(link)
            link.drop()
            return
        }
        host?.linkClaimed(link)
    }

    /// At start, before anything is asked of the kernel: the links a predecessor kept become
    /// links we hold under their old ids, waiting for a manager to claim them; new links' ids
    /// start above every id of this boot.
    func adoptHanded() {
        guard keeper.isKeeping else { return }
        let (adopted, highest) = keeper.adopt(now: loop.now, sockets: sockets) { id, fd, peer, role in
            KernelLink(id: id, fileDescriptor: fd, peer: peer, role: role,
                       maximumTransmissionUnit: sockets.maximumTransmissionUnit(fd), loop: loop, transport: self)
        }
        registry.adopt(adopted, highestID: highest)
    }

    /// The transport closes. With a store (a deliberate stop) each link is removed from the
    /// store and disconnected (mgmt Disconnect, when `canDisconnect`), so its peer sees it end
    /// now — the store would hold it until the unit stopped, and the kernel's idle-link timeout
    /// after that. Returns the answers to wait for. Without a store links are dropped (their
    /// sockets closed; the kernel ends them).
    func endAll(canDisconnect: Bool) -> [() -> Bool] {
        guard keeper.isKeeping else {
            for link in registry.removeAll() { link.drop() }
            return []
        }
        var waits: [() -> Bool] = []
        for link in registry.removeAll() {
            forgetStored(link)
            link.drop()
            guard canDisconnect else { continue }
            let answer = Answer()
            host?.disconnect(link.peer) { answer.came = true }
            waits.append { answer.came }
        }
        return waits
    }

    /// Drops every link without telling anyone (what a killed process leaves; tests).
    func dropAll() {
        for link in registry.removeAll() { link.drop() }
    }

    // MARK: What links tell us (`KernelLinkOwner`)

    func report(_ error: KernelError) { host?.report(error) }

    /// The link is ending (or was never wanted): its stored copy must go, before our own closes.
    func forgetStored(_ link: KernelLink) { keeper.forget(link) }

    /// The application ended a link: the kernel is asked to disconnect now (our socket is
    /// closed, and the store's copy removed: neither would end it).
    func linkWasClosedLocally(_ link: KernelLink) {
        registry.remove(link)
        host?.disconnect(link.peer) {}
    }

    /// A link's socket ended under us.
    func linkDidEnd(_ link: KernelLink, errno: Errno?) -> DisconnectReason {
        registry.remove(link)
        forgetStored(link)
        timingWatch.forget(link.peer)  // the next link's own complete says anew
        return host?.linkEnded(link, errno: errno) ?? KernelLink.reason(for: errno)
    }
}

/// Whether the kernel has answered a command `close()` waits for.
final class Answer {
    var came = false
}
