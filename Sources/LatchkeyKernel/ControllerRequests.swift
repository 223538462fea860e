import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// What `ControllerRequests` needs of its coordinator: a way to the controller and what the
/// controller is now, and where refusals are told.
protocol ControllerRequestsHost: AnyObject {
    /// Sends `command` to our controller; while it is detached nothing is sent and false is returned.
    @discardableResult
    func send(_ command: MgmtCommand, _ completion: @escaping MgmtClient.Completion) -> Bool
    /// Whether our controller's index is present.
    var isAttached: Bool { get }
    /// Whether the controller is powered on (as the managers see it).
    var isPoweredOn: Bool { get }
    /// The peers among `peers` with no baseband link.
    func unlinked(among peers: Set<BluetoothAddress>) -> [BluetoothAddress]
    /// The kernel refused a wanted request; it is asked again in `refusal.retryIn`.
    func requestRefused(_ refusal: TransportRefusal, _ error: MgmtError)
    /// A command the kernel refused after the call that sent it returned.
    func commandRefused(_ error: KernelError)
    /// A refused `.power` request is due again: the controller is configured again.
    func powerRetryDue()
    /// Runs `body` once the mgmt queue is answered and no request waits for a retry.
    func afterRequestsAnswered(_ body: @escaping () -> Void)
    /// Whether a central is linked to us (the controller stopped advertising for it).
    var hasPeripheralLink: Bool { get }
}

/// The request mirror: what the transport wants of the controller (advertising, scan, the
/// auto-connect entries, connection timing) and the commands that carry it, sent when asked,
/// re-asserted when the kernel may have forgotten it, and asked again with a capped backoff
/// when refused (`RetrySchedule`), until it takes or the wish is withdrawn. A call updates the
/// mirror at once; while a request waits for its next attempt the mirror says what the kernel
/// holds (`isAdvertising`, `isScanning` false). It owns the wishes, the Start/Stop Discovery
/// commands in flight, the retry schedule and the advertising beside links (`LinkedAdvertising`);
/// the host sends and hears the refusals.
final class ControllerRequests {
    /// What was sent for an advertising request, re-sent on power-on.
    struct AdvertisingSet: Equatable {
        var advertisement: Advertisement
        var instance: AdvertisingInstance
        var timing: [SystemParameter]
    }

    weak var host: (any ControllerRequestsHost)?
    private let schedule: RetrySchedule
    private let linked: LinkedAdvertising
    private var wantedAdvertising: AdvertisingSet?
    private var wantedScan: ScanParameters?
    private var wantedPending: Set<BluetoothAddress> = []
    private var wantedTiming: [SystemParameter]?
    /// Start/Stop Discovery commands not yet answered (a Discovering event meanwhile is ours).
    private var discoveryCommandsInFlight = 0

    init(loop: any EventLoop) {
        schedule = RetrySchedule(loop: loop)
        linked = LinkedAdvertising(loop: loop)
        schedule.onDue = { [weak self] in self?.retry($0) }
        linked.onDue = { [weak self] in self?.readvertise() }
    }

    var backoff: KernelTransport.RetryBackoff {
        get { schedule.backoff }
        set { schedule.backoff = newValue }
    }

    var advertising: AdvertisingSet? { wantedAdvertising }
    var scan: ScanParameters? { wantedScan }
    var pendingConnections: Set<BluetoothAddress> { wantedPending }
    var connectionTiming: [SystemParameter]? { wantedTiming }
    private var isPoweredOn: Bool { host?.isPoweredOn ?? false }

    /// False while a refused Add Advertising waits for its next attempt.
    var isAdvertising: Bool { wantedAdvertising != nil && isPoweredOn && !isRetrying(.advertising) }
    /// False while a refused Start Discovery waits for its next attempt.
    var isScanning: Bool { wantedScan != nil && isPoweredOn && !isRetrying(.scanning) }

    // MARK: Advertising

    /// Sends `set` unless it is what the mirror holds already (the kernel has it). Returns whether it was sent.
    @discardableResult
    func advertise(_ set: AdvertisingSet) -> Bool {
        guard wantedAdvertising != set else { return false }
        wantedAdvertising = set
        attemptNow(.advertising)
        sendAdvertising(set)
        return true
    }

    func stopAdvertising() {
        guard wantedAdvertising != nil else { return }
        wantedAdvertising = nil
        forgetRetry(.advertising)
        command(.removeAdvertising(instance: KernelTransport.advertisingInstance))
    }

    /// The transport closes: the instance is removed by the host, nothing more is wanted.
    func forgetAdvertising() { wantedAdvertising = nil }

    /// Sends the wanted advertising again (the kernel dropped the instance, or a central left),
    /// if there is one and the controller is on. Returns whether it was sent.
    @discardableResult
    func advertiseAgain() -> Bool {
        guard let wantedAdvertising, isPoweredOn else { return false }
        sendAdvertising(wantedAdvertising)
        return true
    }

    /// Interval first (the kernel copies its default interval into an instance when the
    /// instance is added), then the instance; re-adding an instance replaces it. Either
    /// refused (the instance would carry the default interval without the first) is one
    /// refusal of the advertising, asked again; answers for a set no longer wanted are the
    /// newer set's business.
    private func sendAdvertising(_ set: AdvertisingSet) {
        let timing = Refusal()
        host?.send(.setDefaultSystemConfiguration(set.timing)) { result in
            if case .failure(let error) = result { timing.error = error }
        }
        host?.send(.addAdvertising(set.instance)) { [weak self] result in
            guard let self, self.wantedAdvertising == set else { return }
            switch (result, timing.error) {
            case (.failure(let error), _), (.success, let error?): self.refused(.advertising, error)
            case (.success, nil): self.took(.advertising)
            }
        }
    }

    /// Whether the controller advertises while a central is linked to us (`LinkedAdvertising`).
    var advertisesWhileLinked: Bool? { linked.advertisesWhileLinked }
    /// How long after a central left the instance is re-added (`LinkedAdvertising.delay`).
    var readvertiseDelay: Duration {
        get { linked.delay }
        set { linked.delay = newValue }
    }

    /// A central linked: the controller stopped advertising for it. The instance is added
    /// again at once, so that one central (an idle stranger, say) does not hide the lock from
    /// every phone; the kernel refuses it when the controller's LE states do not allow
    /// connectable advertising beside a peripheral link. Then the lock advertises again when
    /// the central leaves (`centralLeft`), and the refusal is reported once. The advertising
    /// the application asked for stays asked for either way.
    func centralLinked() {
        guard let wantedAdvertising, isPoweredOn, linked.triesWhileLinked else { return }
        command(.setDefaultSystemConfiguration(wantedAdvertising.timing))
        host?.send(.addAdvertising(wantedAdvertising.instance)) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                _ = self.linked.noteAnswer(took: true)
            case .failure(let error):
                guard self.linked.noteAnswer(took: false) else { return }
                self.host?.commandRefused(KernelError(.management, "this controller cannot advertise while a central "
                                                      + "is linked (its LE states, as the kernel checks them; \(error)): "
                                                      + "a linked central hides the lock until it leaves"))
            }
        }
    }

    /// A central left: the instance is re-added (which restarts it), so a controller that
    /// stopped advertising for the connection advertises again even if the kernel did not
    /// re-enable it. Not at once: a power-off ends every link before its New Settings arrives,
    /// and an instance added while the controller shuts down left the phone's next link dead
    /// (HIL scenario 31); so the re-add waits `readvertiseDelay`, and any change of power state
    /// cancels it (power-on re-asserts advertising anyway).
    func centralLeft() {
        guard wantedAdvertising != nil, isPoweredOn else { return }
        linked.schedule()
    }

    /// The power state changed: power-on re-asserts advertising; power-off must not re-add it.
    func powerChanged() { linked.cancel() }

    /// The re-add's delay ran out.
    private func readvertise() {
        // Another central linked meanwhile: the kernel stopped advertising for it.
        guard host?.hasPeripheralLink == false else { return }
        advertiseAgain()
    }

    // MARK: Scanning

    /// A running scan is stopped first; the timing is sent, then Start Discovery.
    func startScanning(_ parameters: ScanParameters, timing: [SystemParameter]) {
        if wantedScan != nil { discoveryCommand(.stopDiscovery(.lowEnergy)) }
        wantedScan = parameters
        attemptNow(.scanning)
        command(.setDefaultSystemConfiguration(timing)) { [weak self] error in
            if self?.wantedScan == parameters { self?.refused(.scanning, error) }
        }
        startDiscovery()
    }

    func stopScanning() {
        guard wantedScan != nil else { return }
        wantedScan = nil
        forgetRetry(.scanning)
        discoveryCommand(.stopDiscovery(.lowEnergy))
    }

    /// The kernel ended the scan when the controller went down.
    func scanEnded() { wantedScan = nil }

    /// The kernel reported discovery stopped: LE discovery ends by itself after 10.24 s
    /// (DISCOV_LE_TIMEOUT); the seam's scan runs until stopped, so it is restarted unless the
    /// end was our own doing. Returns whether it was restarted.
    @discardableResult
    func discoveryStopped() -> Bool {
        guard isScanning && discoveryCommandsInFlight == 0 else { return false }
        startDiscovery()
        return true
    }

    /// A refused start keeps the scan wanted and is asked again.
    private func startDiscovery() {
        let parameters = wantedScan
        discoveryCommand(.startDiscovery(.lowEnergy)) { [weak self] result in
            guard let self, let parameters, self.wantedScan == parameters else { return }
            switch result {
            case .success: self.took(.scanning)
            case .failure(let error): self.refused(.scanning, error)
            }
        }
    }

    /// A Start/Stop Discovery, counted so the Discovering events it causes are not taken
    /// for the kernel ending the scan by itself. A failed stop is harmless (Rejected: the
    /// kernel had already stopped), so a stop's answer is not looked at.
    private func discoveryCommand(_ command: MgmtCommand, answered: MgmtClient.Completion? = nil) {
        let sent = host?.send(command) { [weak self] result in
            guard let self else { return }
            self.discoveryCommandsInFlight -= 1
            answered?(result)
        } ?? false
        if sent { discoveryCommandsInFlight += 1 }
    }

    // MARK: The pending-connection list and connection timing

    func wants(_ peer: BluetoothAddress) -> Bool { wantedPending.contains(peer) }

    /// Returns false when the entry was wanted already (the kernel holds it: nothing is sent).
    func addPending(_ peer: BluetoothAddress) -> Bool {
        guard wantedPending.insert(peer).inserted else { return false }
        sendAddDevice(peer)
        return true
    }

    /// Returns false when the entry was not wanted (nothing is sent).
    func removePending(_ peer: BluetoothAddress) -> Bool {
        guard wantedPending.remove(peer) != nil else { return false }
        forgetRetry(.pendingConnection(peer))
        command(.removeDevice(peer))
        return true
    }

    /// Wanted peers with no baseband link: the ones the kernel should be scanning for.
    var unlinkedPending: [BluetoothAddress] { host?.unlinked(among: wantedPending) ?? [] }

    /// Sends every entry with no link once more (the kernel keeps it; the command restarts its
    /// auto-connect scan). A refusal is reported and asked again; the entry stays wanted.
    func resendUnlinked() {
        for peer in unlinkedPending { sendAddDevice(peer) }
    }

    /// Another mgmt client removed `peer`'s entry: it is sent again if we want it. Returns whether it was.
    @discardableResult
    func deviceRemoved(_ peer: BluetoothAddress) -> Bool {
        guard wantedPending.contains(peer) else { return false }
        sendAddDevice(peer)
        return true
    }

    /// The kernel keeps new defaults for its next passive scan but does not restart a running
    /// one (mgmt_config.c stores them only), so the entries with no link are re-sent after
    /// the timing: Add Device ends in hci_update_passive_scan_sync, which restarts the
    /// auto-connect scan with the new interval and window now (an execution mode switch).
    func setConnectionTiming(_ timing: [SystemParameter]) {
        wantedTiming = timing
        attemptNow(.connectionTiming)
        sendConnectionTiming(timing)
        guard isPoweredOn else { return }
        resendUnlinked()
    }

    /// Add Device for an entry we want; a refusal keeps the entry wanted and asks again.
    private func sendAddDevice(_ peer: BluetoothAddress) {
        let request = TransportRefusal.Request.pendingConnection(peer)
        host?.send(.addDevice(peer, .autoConnect)) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.took(request)
            case .failure(let error):
                guard self.wantedPending.contains(peer) else { return self.forgetRetry(request) }
                self.refused(request, error)
            }
        }
    }

    /// Set Default System Configuration for connection timing, asked again when refused.
    private func sendConnectionTiming(_ timing: [SystemParameter]) {
        host?.send(.setDefaultSystemConfiguration(timing)) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.took(.connectionTiming)
            case .failure(let error):
                guard self.wantedTiming == timing else { return self.forgetRetry(.connectionTiming) }
                self.refused(.connectionTiming, error)
            }
        }
    }

    // MARK: Re-assertion and retries

    /// Everything the kernel may have forgotten: timing, our advertising instance, every Add
    /// Device entry. The host then calls `forgetRetries` (earlier refusals' timers are moot).
    func reassert() {
        if let wantedTiming { sendConnectionTiming(wantedTiming) }
        if let wantedAdvertising { sendAdvertising(wantedAdvertising) }
        for peer in wantedPending.sorted() { sendAddDevice(peer) }
    }

    /// Sends `command`; a refusal goes to the host after `failed` has corrected the mirror.
    func command(_ command: MgmtCommand, failed: ((MgmtError) -> Void)? = nil) {
        host?.send(command) { [weak self] result in
            guard case .failure(let error) = result else { return }
            failed?(error)
            self?.host?.commandRefused(KernelError(error))
        }
    }

    /// Whether `request` waits for its next attempt after a refusal.
    func isRetrying(_ request: TransportRefusal.Request) -> Bool { schedule.isRetrying(request) }

    /// The kernel refused `request`: the host reports it and the next attempt is scheduled.
    func refused(_ request: TransportRefusal.Request, _ error: MgmtError) {
        let (attempt, delay) = schedule.refused(request)
        host?.requestRefused(TransportRefusal(request: request, reason: "\(error)", attempt: attempt, retryIn: delay),
                             error)
    }

    /// The kernel took `request`: its refusals are over.
    func took(_ request: TransportRefusal.Request) { runWhenAnswered(schedule.took(request)) }

    /// The application withdrew the wish.
    private func forgetRetry(_ request: TransportRefusal.Request) { took(request) }

    /// The application asked again itself: its commands are the attempt, the timer's is not
    /// needed (the entry stays until their answer).
    private func attemptNow(_ request: TransportRefusal.Request) { schedule.attemptNow(request) }

    /// Drops every scheduled attempt: the controller went away or powered on (`reassert`
    /// sends everything again).
    func forgetRetries() { runWhenAnswered(schedule.forgetAll()) }

    /// The transport closes: nothing waits on it any more.
    func close() {
        linked.cancel()
        _ = schedule.forgetAll()
    }

    /// Keeps `body` until no request waits for its next attempt; false (run it now) when none does.
    func wait(_ body: @escaping () -> Void) -> Bool { schedule.wait(body) }

    /// Sends what `request` wants again, if it is still wanted and can be sent now. The
    /// entry stays (with no timer) until the answer comes: `took` or another `refused`.
    private func retry(_ request: TransportRefusal.Request) {
        guard host?.isAttached == true else { return forgetRetries() }  // re-asserted when the index returns
        switch request {
        case .power:
            host?.powerRetryDue()
        case .advertising:
            guard advertiseAgain() else { return forgetRetry(request) }
        case .scanning:
            // Computed from the same parameters when the scan started, so it cannot fail here.
            guard let wantedScan, isPoweredOn,
                  let timing = try? SystemConfiguration.discovery(wantedScan) else { return forgetRetry(request) }
            command(.setDefaultSystemConfiguration(timing))
            startDiscovery()
        case .connectionTiming:
            guard let wantedTiming else { return forgetRetry(request) }
            sendConnectionTiming(wantedTiming)
            // As `setConnectionTiming`: the running auto-connect scan restarts with it.
            if isPoweredOn { resendUnlinked() }
        case .pendingConnection(let peer):
            guard wantedPending.contains(peer) else { return forgetRetry(request) }
            sendAddDevice(peer)
        }
    }

    /// `afterRequestsAnswered` bodies that found a request waiting for its next attempt run
    /// once none does (through `afterRequestsAnswered` again: the attempt's answer is in).
    private func runWhenAnswered(_ released: [() -> Void]) {
        for body in released { host?.afterRequestsAnswered(body) }
    }
}

/// The first refusal among commands answered in order (one request's several commands).
final class Refusal {
    var error: MgmtError?
}
