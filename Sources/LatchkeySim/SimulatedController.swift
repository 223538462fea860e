import LatchkeyTransport

/// The controller and kernel of one simulated device: what survives the application. It holds
/// the radio state, the advertising set, the scan, the pending-connection list and the links
/// that are up; the application attaches by setting `delegate` and claims links by setting
/// theirs, and `detachApplication()` models its process dying (the pending list and the links
/// stay with the "system", as in the kernel). Everything runs on the air's loop; no callback
/// arrives from inside the call that caused it.
public final class SimulatedController: BluetoothTransport {
    public let address: BluetoothAddress
    public var loop: any EventLoop { air.loop }
    public let air: SimulatedAir
    public private(set) var state: RadioState = .poweredOn
    /// The attached application, held weakly as Core Bluetooth holds its delegates.
    public weak var delegate: (any BluetoothTransportDelegate)?

    // Advertising (driven by SimulatedAir+Advertising).
    public private(set) var advertisement: Advertisement?
    /// The set a legacy advertiser stopped when it accepted a connection request; restored
    /// if that connection fails to be established.
    var advertisingSuspendedForConnection: Advertisement?
    var nextAdvertisingEvent: Instant?
    var advertisingTimer: Scheduled?

    // Scanning.
    private struct ScanSession {
        let number: UInt64
        let parameters: ScanParameters
        let window: ListeningWindow
        /// What each advertiser was last reported with (for filterDuplicates).
        var reported: [BluetoothAddress: AdvertisingData] = [:]
    }
    private var scan: ScanSession?
    private var scanSessions: UInt64 = 0
    public var scanParameters: ScanParameters? { scan?.parameters }

    // The pending-connection list.
    public private(set) var pendingConnections: Set<BluetoothAddress> = []
    public private(set) var connectionParameters = ConnectionParameters.kernelDefault
    /// Addresses a connection request was sent to and whose link is not yet established.
    var connecting: Set<BluetoothAddress> = []
    /// The controller's own passive scan, open while some entry is neither linked nor connecting.
    private(set) var backgroundScan: ListeningWindow?

    /// Our ends of the links that exist (including ends whose disconnect is under way).
    private(set) var links: [SimulatedLink] = []

    init(address: BluetoothAddress, air: SimulatedAir) {
        self.address = address
        self.air = air
    }

    // MARK: Power

    /// Like a controller power-down: every link ends (the peer sees remote power off),
    /// advertising and scanning stop, and the pending list is cleared.
    public func powerOff() {
        guard state == .poweredOn else { return }
        state = .poweredOff
        stopAdvertisingNow()
        scan = nil
        pendingConnections = []
        connecting = []
        updateBackgroundScan()
        for end in links { end.connection.endImmediately(from: end, localReason: .localHostTerminated,
                                                          remoteReason: .remotePowerOff) }
        air.radioActivityDidChange()
        notifyState()
    }

    public func powerOn() {
        guard state != .poweredOn else { return }
        state = .poweredOn
        updateBackgroundScan()
        air.radioActivityDidChange()
        notifyState()
    }

    private func notifyState() {
        let newState = state
        loop.execute { [self] in delegate?.transport(self, didChangeState: newState) }
    }

    // MARK: The application

    /// The process that owned this controller died: its callbacks go nowhere, its
    /// advertising and scan stop, but the pending list stays and the links stay up until
    /// the unclaimed-link rule drops them (`SimulatedLink.unclaimedLinkTimeout`).
    public func detachApplication() {
        delegate = nil
        for end in links { end.delegate = nil }
        stopAdvertisingNow()
        scan = nil
        air.radioActivityDidChange()
    }

    // MARK: Advertising

    public var isAdvertising: Bool { advertisement != nil }

    public func startAdvertising(_ advertisement: Advertisement) throws(TransportError) {
        guard state == .poweredOn else { throw TransportError(.poweredOff, "cannot advertise while powered off") }
        guard RadioLimits.advertisingInterval.contains(advertisement.interval) else {
            throw TransportError(.invalidParameters,
                                 "advertising interval \(advertisement.interval) outside 20 ms–10.24 s")
        }
        stopAdvertisingNow()
        resumeAdvertising(advertisement)
        air.radioActivityDidChange()
    }

    public func stopAdvertising() {
        stopAdvertisingNow()
        air.radioActivityDidChange()
    }

    private func stopAdvertisingNow() {
        advertisement = nil
        advertisingSuspendedForConnection = nil
        nextAdvertisingEvent = nil
        advertisingTimer?.cancel()
        advertisingTimer = nil
    }

    /// Starts an advertising set; the first event comes after one advDelay.
    func resumeAdvertising(_ advertisement: Advertisement) {
        self.advertisement = advertisement
        nextAdvertisingEvent = loop.now + air.drawAdvertisingDelay()
    }

    func suspendAdvertisingForIncomingConnection() {
        let suspended = advertisement
        stopAdvertisingNow()
        advertisingSuspendedForConnection = suspended
    }

    // MARK: Scanning

    public var isScanning: Bool { scan != nil }

    /// Starts a new scan session: the window phase restarts now and duplicates are
    /// forgotten.
    public func startScanning(_ parameters: ScanParameters) throws(TransportError) {
        guard state == .poweredOn else { throw TransportError(.poweredOff, "cannot scan while powered off") }
        try RadioLimits.check(scanInterval: parameters.interval, window: parameters.window)
        scanSessions += 1
        scan = ScanSession(number: scanSessions, parameters: parameters,
                           window: ListeningWindow(start: loop.now, interval: parameters.interval,
                                                   window: parameters.window))
        air.radioActivityDidChange()
    }

    public func stopScanning() {
        scan = nil
        air.radioActivityDidChange()
    }

    /// An advertising event reached us. Reported if our scan window is open, and, with
    /// filterDuplicates, only if this advertiser was not yet reported with this data in
    /// this session. An active scan reports the scan response merged into the same report.
    func hear(_ advertisement: Advertisement, from advertiser: SimulatedController, at time: Instant) {
        guard var session = scan, session.window.isOpen(at: time) else { return }
        let data = session.parameters.active
            ? advertisement.data.merged(withScanResponse: advertisement.scanResponse) : advertisement.data
        if session.parameters.filterDuplicates {
            guard session.reported[advertiser.address] != data else { return }
            session.reported[advertiser.address] = data
            scan = session
        }
        let report = AdvertisementReport(address: advertiser.address, data: data,
                                         rssi: air.sampleRSSI(advertiser, self),
                                         connectable: advertisement.connectable)
        let number = session.number
        loop.execute { [self] in
            guard scan?.number == number else { return }  // the scan that heard it has ended
            delegate?.transport(self, didReceive: report)
        }
    }

    // MARK: The pending-connection list

    /// Accepted while powered off too (mgmt Add Device is); the entry waits for power-on.
    public func addPendingConnection(to peer: BluetoothAddress) throws(TransportError) {
        guard peer != address else { throw TransportError(.invalidParameters, "cannot connect to ourselves") }
        pendingConnections.insert(peer)
        updateBackgroundScan()
        air.radioActivityDidChange()
    }

    /// Removes the entry; a link that is up stays up, one being set up is not completed.
    public func removePendingConnection(to peer: BluetoothAddress) {
        pendingConnections.remove(peer)
        updateBackgroundScan()
        air.radioActivityDidChange()
    }

    public func setConnectionParameters(_ parameters: ConnectionParameters) throws(TransportError) {
        try RadioLimits.check(scanInterval: parameters.scanInterval, window: parameters.scanWindow)
        guard RadioLimits.connectionInterval.contains(parameters.connectionInterval),
              RadioLimits.supervisionTimeout.contains(parameters.supervisionTimeout),
              parameters.supervisionTimeout > parameters.connectionInterval * 2 else {
            throw TransportError(.invalidParameters, "connection interval / supervision timeout outside Core Vol 6 Part B 4.5")
        }
        connectionParameters = parameters
        backgroundScan = nil  // restart with the new timing
        updateBackgroundScan()
        air.radioActivityDidChange()
    }

    func isLinked(to peer: BluetoothAddress) -> Bool {
        links.contains { $0.peer == peer }
    }

    private func isWaiting(for peer: BluetoothAddress) -> Bool {
        pendingConnections.contains(peer) && !isLinked(to: peer) && !connecting.contains(peer)
    }

    /// Whether an advertising event from `peer` should make us connect (window aside).
    func wantsToConnect(to peer: BluetoothAddress) -> Bool {
        backgroundScan != nil && isWaiting(for: peer)
    }

    /// Opens the background scan when some entry waits, closes it when none does. The
    /// window phase starts when the scan (re)starts, as a controller's scan does.
    func updateBackgroundScan() {
        let needed = state == .poweredOn && pendingConnections.contains { isWaiting(for: $0) }
        if !needed {
            backgroundScan = nil
        } else if backgroundScan == nil {
            backgroundScan = ListeningWindow(start: loop.now, interval: connectionParameters.scanInterval,
                                             window: connectionParameters.scanWindow)
        }
    }

    // MARK: Links

    public var connectedLinks: [any ATTLink] { links.filter { $0.isConnected } }

    func linkDidComeUp(_ end: SimulatedLink) {
        links.append(end)
        end.startUnclaimedCountdown()
        updateBackgroundScan()
        loop.execute { [self] in
            guard end.isConnected else { return }
            delegate?.transport(self, didConnect: end)
        }
    }

    func linkDidClose(_ end: SimulatedLink) {
        links.removeAll { $0 === end }
        updateBackgroundScan()
        air.radioActivityDidChange()
    }
}
