import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// The seam on the Linux kernel's Bluetooth stack, for one adapter: the mgmt socket for the
/// controller and L2CAP sockets on the ATT channel for the links, all on the `PosixEventLoop`.
/// What the application asks for is mirrored here and re-asserted whenever the kernel may have
/// forgotten it (power-on, the index reappearing, another mgmt client removing ours). A call
/// updates the mirror at once; a refused command is retried with a capped backoff
/// (`ControllerRequests`), reported, and the mirror says it is not held until it takes.
/// docs/ARCHITECTURE.md, "The kernel transport (LatchkeyKernel)".
public final class KernelTransport: BluetoothTransport {
    /// The one advertising instance we use (1...254; mgmt-api.txt, Add Advertising).
    public static let advertisingInstance: UInt8 = 1

    public let mgmt: MgmtClient
    let posixLoop: PosixEventLoop
    public var loop: any EventLoop { posixLoop }
    /// The controller's identity address (Read Controller Information).
    public let address: BluetoothAddress
    /// The controller's current mgmt index (it can change if the controller reappears).
    public var index: MgmtIndex { lifecycle.index }
    public weak var delegate: (any BluetoothTransportDelegate)?
    /// A command the kernel refused, or a link that could not be claimed, after the call
    /// that caused it returned.
    public var onFailure: ((KernelError) -> Void)?

    /// The controller's setup, index and power state as mgmt tells them (`ControllerLifecycle`).
    let lifecycle: ControllerLifecycle
    /// Where each mgmt event goes (`MgmtEventRouter`).
    let events: MgmtEventRouter
    /// Whether our controller's index is present: commands go to it only then.
    var isAttached: Bool { lifecycle.isAttached }
    public var state: RadioState { lifecycle.state }

    /// What the application asked for, the commands that carry it, and when a refused one is
    /// asked again (`ControllerRequests`).
    let requests: ControllerRequests
    public var pendingConnections: Set<BluetoothAddress> { requests.pendingConnections }
    /// How refused requests are asked again.
    public var retryBackoff: RetryBackoff {
        get { requests.backoff }
        set { requests.backoff = newValue }
    }

    /// The lock's listener, the phone's claims, the links we hold a socket for and what is
    /// kept of them in the descriptor store (`KernelLinks`).
    let links: KernelLinks
    /// The links a predecessor kept that this transport adopted at start.
    public var adoptedLinks: [LinkID] { links.adopted }
    /// What was handed back but could not be adopted (closed and removed from the store).
    public var adoptionFailures: [KernelError] { links.adoptionFailures }
    /// LE devices with a baseband link up, their disconnect reasons, the stale-link sweep
    /// (`ConnectedDevices`).
    let connectedDevices = ConnectedDevices()
    /// Whether the controller advertises while a central is linked to us: nil until a link
    /// tried it, false once the kernel refused the instance then (it checks the
    /// controller's LE states, `is_advertising_allowed`). While false, one linked central
    /// hides the lock until it leaves; `onFailure` said so once (`ControllerRequests.centralLinked`).
    public var advertisesWhileLinked: Bool? { requests.advertisesWhileLinked }
    /// How long after a central left the instance is re-added (`LinkedAdvertising.delay`).
    var readvertiseDelay: Duration {
        get { requests.readvertiseDelay }
        set { requests.readvertiseDelay = newValue }
    }
    /// When the auto-connect entries with no link are sent again: on a failed attempt the HCI
    /// watch saw, or on a timer where it cannot watch (`PendingRescan`).
    let pendingRescan: PendingRescan
    /// How long an auto-connect entry may go without a link before it is sent again, where the
    /// failure cannot be seen. A 6.12 kernel stops scanning for an entry after a failed connection
    /// attempt and reports it to no mgmt socket, so the transport watches the controller's HCI
    /// events for it (`ConnectFailureWatch`); without
    /// CAP_NET_RAW it falls back to this interval, reported once through `onFailure`. 5 s: above
    /// the kernel's own 4 s attempt. The finding, and HIL scenario 41 that provokes it:
    /// docs/LINUX-BLE.md, "What the HIL suite found".
    var pendingRefreshInterval: Duration {
        get { pendingRescan.interval }
        set { pendingRescan.interval = newValue }
    }
    /// `pendingRefreshInterval`'s value unless a test sets it (`latchkey doctor --phone` names it).
    public static let defaultPendingRefreshInterval: Duration = .seconds(5)

    init(mgmt: MgmtClient, index: MgmtIndex, info: ControllerInfo, loop: PosixEventLoop, sockets: any LinkSocketProvider,
         hciEvents: any HCIEventSourceProvider, descriptorStore: (any DescriptorStore)? = nil) {
        self.mgmt = mgmt
        self.address = info.address
        lifecycle = ControllerLifecycle(index: index, info: info)
        posixLoop = loop
        links = KernelLinks(address: info.address, sockets: sockets, hciEvents: hciEvents, loop: loop,
                            store: descriptorStore)
        requests = ControllerRequests(loop: loop)
        pendingRescan = PendingRescan(events: hciEvents, loop: loop)
        events = MgmtEventRouter(lifecycle: lifecycle, devices: connectedDevices, requests: requests)
        lifecycle.host = self
        connectedDevices.host = self
        requests.host = self
        links.host = self
        events.host = self
        mgmt.onEvent = { [weak self] index, event in self?.events.route(event, on: index) }
        mgmt.onClose = { [weak self] error in self?.lifecycle.mgmtClosed(error) }
        wirePendingRescan()
        // Before anything is asked of the kernel: the links a predecessor kept are ours, so
        // neither the sweep below nor a claim touches them.
        links.adoptHanded()
        // A predecessor killed before `close()` left its instance advertising: remove it
        // (Invalid Parameters when there is none, which is no failure).
        send(.removeAdvertising(instance: Self.advertisingInstance)) { _ in }
        lifecycle.configure()
        if state == .poweredOn { reassert() }  // already on: learn which links are up
    }

    deinit { close() }

    /// Bounds `close()`'s wait for the kernel to answer Remove Advertising. Our choice: the
    /// kernel answers after one HCI command, itself bounded by HCI_CMD_TIMEOUT (2 s).
    public static let closeTimeout: Duration = .seconds(2)

    /// Stops using the adapter: our advertising instance is removed (the kernel would keep
    /// advertising it for a process that is gone), then links, listener, claims and the mgmt
    /// socket are closed. The auto-connect list stays, as it does when a process dies.
    public func close() {
        let waits = withdrawAdvertising() + links.endAll(canDisconnect: isAttached && mgmt.isOpen)
        // Closing goes on either way: a loop error or no answer leaves the kernel's instance
        // (which the next start removes, see init) or a link (which the kernel's idle-link
        // timeout ends once its sockets are closed).
        if !waits.isEmpty { _ = try? posixLoop.run(until: { waits.allSatisfy { $0() } }, timeout: Self.closeTimeout) }
        links.detach()
        pendingRescan.close()
        requests.close()  // nothing waits on a closed transport
        mgmt.onClose = nil
        mgmt.close()
    }

    /// Removes our instance; `close()` waits (bounded) for the answer, so the removal has
    /// happened before the socket closes.
    private func withdrawAdvertising() -> [() -> Bool] {
        guard requests.advertising != nil, isAttached, mgmt.isOpen else { return [] }
        requests.forgetAdvertising()
        let answer = Answer()
        send(.removeAdvertising(instance: Self.advertisingInstance)) { _ in answer.came = true }  // refused: none left
        return [{ answer.came }]
    }

    // MARK: Advertising

    /// False while a refused Add Advertising waits for its next attempt.
    public var isAdvertising: Bool { requests.isAdvertising }

    /// Idempotent: what the kernel already advertises for us (the mirror says so: it is
    /// re-asserted on power-on and whenever the kernel drops the instance) is not sent again.
    /// Re-adding an instance makes the kernel stop advertising, set the parameters and start
    /// again; a central's LE Create Connection that meets that gap fails ("Connection Failed
    /// to be Established", 0x3E, at once on btvirt), and a 6.12 kernel then stops the central's
    /// auto-connect scan (see `pendingRefreshInterval`). The lock agent asks again on every
    /// power-on, right after the transport re-asserted the same advertising (HIL scenario 31).
    public func startAdvertising(_ advertisement: Advertisement) throws(TransportError) {
        guard state == .poweredOn else { throw TransportError(.poweredOff, "cannot advertise while \(state)") }
        let set = ControllerRequests.AdvertisingSet(
            advertisement: advertisement,
            instance: try AdvertisingInstance(instance: Self.advertisingInstance, advertisement),
            timing: try SystemConfiguration.peripheral(advertisingInterval: advertisement.interval))
        do { try links.openListener() } catch { throw TransportError(.failed, error.description) }
        if let refused = links.watchTiming(on: index) { onFailure?(refused) }
        requests.advertise(set)
        connectedDevices.sweepStaleLinks()
    }

    public func stopAdvertising() { requests.stopAdvertising() }

    // MARK: Scanning

    /// False while a refused Start Discovery waits for its next attempt.
    public var isScanning: Bool { requests.isScanning }

    /// mgmt discovery is always an active scan: `parameters.active` cannot be honoured, and
    /// duplicate filtering is the caller's (CentralManager does it).
    public func startScanning(_ parameters: ScanParameters) throws(TransportError) {
        guard state == .poweredOn else { throw TransportError(.poweredOff, "cannot scan while \(state)") }
        requests.startScanning(parameters, timing: try SystemConfiguration.discovery(parameters))
    }

    public func stopScanning() { requests.stopScanning() }

    // MARK: The pending-connection list (mgmt Add Device, auto-connect)

    /// Accepted while powered off or detached: the kernel keeps Add Device entries across
    /// power states, and the mirror is re-asserted when the controller comes back.
    ///
    /// Idempotent: an entry the mirror holds is in the kernel (it is re-asserted on power-on,
    /// on the index's return, and when another client removes it), and entries survive link
    /// loss, so the application asking again sends nothing. While an entry has no link the
    /// transport re-sends it on its own after a failed connection attempt (why and how: see
    /// `pendingRefreshInterval`).
    public func addPendingConnection(to peer: BluetoothAddress) throws(TransportError) {
        guard peer != address else { throw TransportError(.invalidParameters, "cannot connect to ourselves") }
        guard requests.addPending(peer) else { return links.claimSoon(peer) }
        // Already linked at the HCI level (made while we were away): claim it now.
        links.claimSoon(peer)
        restartPendingRefresh()
    }

    public func removePendingConnection(to peer: BluetoothAddress) {
        guard requests.removePending(peer) else { return }
        restartPendingRefresh()
    }

    /// The entries with no link are re-sent after the timing, so that the running
    /// auto-connect scan restarts with it (`ControllerRequests.setConnectionTiming`).
    public func setConnectionParameters(_ parameters: ConnectionParameters) throws(TransportError) {
        requests.setConnectionTiming(try SystemConfiguration.connection(parameters))
    }

    // MARK: Commands

    /// Sends `command` to our controller; while it is detached nothing is sent (the mirror
    /// is re-asserted when it comes back) and false is returned.
    @discardableResult
    func send(_ command: MgmtCommand, _ completion: @escaping MgmtClient.Completion) -> Bool {
        lifecycle.send(command, completion)
    }

    /// The mgmt queue answers in order, so what waits follows the last command sent; a
    /// refused request waiting for its next attempt is not answered yet (it has not taken).
    public func afterRequestsAnswered(_ body: @escaping () -> Void) {
        mgmt.afterAnswers(on: index) { [weak self] in
            guard let self, self.requests.wait(body) else { return body() }
        }
    }
}

extension KernelTransport: ControllerRequestsHost {
    var isPoweredOn: Bool { state == .poweredOn }
    var hasPeripheralLink: Bool { links.hasPeripheralLink }
    func unlinked(among peers: Set<BluetoothAddress>) -> [BluetoothAddress] { connectedDevices.unlinked(among: peers) }
    func commandRefused(_ error: KernelError) { onFailure?(error) }
    func powerRetryDue() { lifecycle.configure() }

    /// Reported to `onFailure` and the delegate (`didRefuse`); `ControllerRequests` asks again.
    func requestRefused(_ refusal: TransportRefusal, _ error: MgmtError) {
        onFailure?(KernelError(error))
        delegate?.transport(self, didRefuse: refusal)
    }
}
