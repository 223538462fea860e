import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyTransport

/// CBCentralManagerDelegate. Only the state update is required, as in Core Bluetooth.
public protocol CentralManagerDelegate: AnyObject {
    func centralManagerDidUpdateState(_ central: CentralManager)
    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral,
                        advertisementData: AdvertisingData, rssi: Int8)
    func centralManager(_ central: CentralManager, didStopScan reason: ScanStopReason)
    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral)
    /// `error` is nil when the app cancelled the connection.
    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: BluetoothError?)
    /// centralManager(_:willRestoreState:): the first callback of a manager re-created with a
    /// restore identifier that had state preserved, before `centralManagerDidUpdateState`.
    func centralManager(_ central: CentralManager, willRestoreState state: RestoredCentralState)
    /// The preserved state could not be written (or read back at start): after a relaunch
    /// the manager would not find the work it has now.
    func centralManager(_ central: CentralManager, didFailToPreserveState error: any Error)
    /// The system refused one of the manager's requests (a pending connect, a scan, timing):
    /// the request still stands and is asked again after `refusal.retryIn`.
    func centralManager(_ central: CentralManager, didRefuse refusal: TransportRefusal)
}

extension CentralManagerDelegate {
    public func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral,
                               advertisementData: AdvertisingData, rssi: Int8) {}
    public func centralManager(_ central: CentralManager, didStopScan reason: ScanStopReason) {}
    public func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {}
    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral,
                               error: BluetoothError?) {}
    public func centralManager(_ central: CentralManager, willRestoreState state: RestoredCentralState) {}
    public func centralManager(_ central: CentralManager, didFailToPreserveState error: any Error) {}
    public func centralManager(_ central: CentralManager, didRefuse refusal: TransportRefusal) {}
}

/// CBCentralManager on any `BluetoothTransport`. `connect` never times out: the peripheral goes
/// on the transport's pending list (the kernel's auto-connect list on Linux) until the link
/// forms or the app cancels, minutes or weeks later. As in Core Bluetooth a request is used up
/// by one connection: the app asks again after a disconnection, or the manager withdraws the
/// entry. With a restore identifier the manager preserves its work and a re-created manager
/// restores it (`CentralManager+Restoration.swift`).
public final class CentralManager: BluetoothTransportDelegate {
    public let transport: any BluetoothTransport
    public weak var delegate: (any CentralManagerDelegate)?
    public internal(set) var state: ManagerState

    /// Peripherals this manager has seen or been asked about (retrievePeripherals).
    var known: [BluetoothAddress: Peripheral] = [:]
    /// Outstanding connect requests with their options (connection alerts read these).
    public internal(set) var pendingConnects: [BluetoothAddress: ConnectOptions] = [:]
    /// Options of the request that produced each current connection.
    public internal(set) var connectedOptions: [BluetoothAddress: ConnectOptions] = [:]

    // Scanning
    public private(set) var isScanning = false
    var scanFilter: [BluetoothUUID]?
    var scanOptions = ScanOptions()
    private var scanTimer: Scheduled?
    private var discoveredThisScan: Set<BluetoothAddress> = []
    /// Execution mode state (CentralManager+Background.swift).
    var background = CentralBackgroundState()

    /// Hex trace of every ATT PDU, for `.trace` logging.
    public var trace: ((BluetoothAddress, String, [UInt8]) -> Void)?

    /// Restoration bookkeeping (CentralManager+Restoration.swift); nil without an identifier.
    var preservation: Preservation<CentralRestorationState>?

    /// CBCentralManager(delegate:queue:options:). With a restore identifier and a storage in
    /// `options`, preserved state is loaded now (so that a link the transport reports early
    /// finds its request) and handed to the delegate in `willRestoreState` before the first
    /// state update.
    public init(transport: any BluetoothTransport, delegate: (any CentralManagerDelegate)? = nil,
                options: ManagerOptions = ManagerOptions()) {
        self.transport = transport
        self.delegate = delegate
        self.state = ManagerState(transport.state)
        preservation = options.restoration.map { Preservation(identifier: $0.identifier, storage: $0.storage) }
        transport.delegate = self
        loadPreservedPeripherals()
        // Core Bluetooth always tells the delegate the state first, asynchronously.
        transport.loop.execute { [weak self] in
            guard let self else { return }
            if self.preservation?.isRestoring == true {
                self.restoreWhenTransportIsReady()
            } else {
                self.delegate?.centralManagerDidUpdateState(self)
                self.reportLoadError()
            }
        }
    }

    // MARK: Scanning

    /// scanForPeripherals(withServices:options:), bounded by `options.duration`.
    public func scanForPeripherals(withServices services: [BluetoothUUID]?, options: ScanOptions = ScanOptions())
        throws(BluetoothError)
    {
        guard state == .poweredOn else { throw .poweredOff }
        guard options.duration > .zero else { throw .invalidParameters("scan duration must be positive") }
        let options = try optionsForMode(services: services, options)
        scanFilter = services
        scanOptions = options
        discoveredThisScan.removeAll()
        defer { preserve() }
        do {
            try transport.startScanning(scanParameters(for: options))
        } catch {
            throw .invalidParameters(error.description)
        }
        isScanning = true
        scanTimer?.cancel()
        scanTimer = transport.loop.schedule(after: options.duration) { [weak self] in
            self?.endScan(.durationElapsed)
        }
    }

    public func stopScan() {
        guard isScanning else { return }
        endScan(.stopped)
    }

    func endScan(_ reason: ScanStopReason) {
        guard isScanning else { return }
        isScanning = false
        scanTimer?.cancel()
        scanTimer = nil
        transport.stopScanning()
        preserve()
        delegate?.centralManager(self, didStopScan: reason)
    }

    // MARK: Connecting

    /// connect(_:options:). No timeout: only `cancelPeripheralConnection` ends the request.
    public func connect(_ peripheral: Peripheral, options: ConnectOptions = ConnectOptions()) throws(BluetoothError) {
        known[peripheral.identifier] = peripheral
        guard peripheral.state != .connected else { return }  // already fulfilled
        pendingConnects[peripheral.identifier] = options
        peripheral.state = .connecting
        // Durable before the system is asked: a relaunch must know every request it holds.
        preserve()
        guard state == .poweredOn else { return }  // asserted when the radio comes on
        do {
            try transport.addPendingConnection(to: peripheral.identifier)
        } catch {
            throw .invalidParameters(error.description)
        }
    }

    /// cancelPeripheralConnection(_:): withdraws a pending request, or ends a live link.
    public func cancelPeripheralConnection(_ peripheral: Peripheral) {
        let address = peripheral.identifier
        pendingConnects[address] = nil
        transport.removePendingConnection(to: address)
        if let bearer = peripheral.bearer {
            peripheral.state = .disconnecting
            bearer.link.disconnect()
        } else {
            peripheral.state = .disconnected
        }
        preserve()
    }

    /// retrievePeripherals(withIdentifiers:): proxies for addresses, known or not.
    public func retrievePeripherals(withIdentifiers ids: [BluetoothAddress]) -> [Peripheral] {
        ids.map { peripheral(for: $0) }
    }

    /// retrieveConnectedPeripherals(withServices:): connected peripherals with a discovered
    /// service among `services` (all connected ones when the list is empty).
    public func retrieveConnectedPeripherals(withServices services: [BluetoothUUID]) -> [Peripheral] {
        known.values.filter { p in
            p.state == .connected
                && (services.isEmpty || (p.services ?? []).contains { services.contains($0.uuid) })
        }.sorted { $0.identifier < $1.identifier }
    }

    func peripheral(for address: BluetoothAddress) -> Peripheral {
        if let p = known[address] { return p }
        let p = Peripheral(identifier: address)
        // Discoveries and subscriptions change what a relaunch would restore.
        p.onCacheChange = { [weak self] in self?.preserve() }
        known[address] = p
        return p
    }

    // MARK: BluetoothTransportDelegate

    public func transport(_ transport: any BluetoothTransport, didChangeState radio: RadioState) {
        state = ManagerState(radio)
        if preservation?.isRestoring == true {
            // Nothing reaches the delegate before `willRestoreState`.
            restoreWhenTransportIsReady()
            return
        }
        if state != .poweredOn {
            if isScanning { endScan(.poweredOff) }
        } else {
            // Fixed, valid timing per mode: only an impossible parameter throws.
            try? applyModeTiming()  // a mode chosen before the radio was on
            // Re-assert every outstanding request: a controller power-down clears the list.
            reassertPendingConnects()
        }
        delegate?.centralManagerDidUpdateState(self)
    }

    public func transport(_ transport: any BluetoothTransport, didRefuse refusal: TransportRefusal) {
        delegate?.centralManager(self, didRefuse: refusal)
    }

    public func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {
        guard isScanning else { return }
        if let filter = scanFilter, !filter.isEmpty,
           !report.data.serviceUUIDs.contains(where: { filter.contains($0) }) { return }
        if !scanOptions.allowDuplicates {
            guard discoveredThisScan.insert(report.address).inserted else { return }
        }
        let p = peripheral(for: report.address)
        if let name = report.data.localName { p.name = name }
        delegate?.centralManager(self, didDiscover: p, advertisementData: report.data, rssi: report.rssi)
    }

    public func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        guard link.role == .central else { return }  // incoming links belong to a peripheral manager
        // Restoration pending: reconciliation adopts it from `connectedLinks`.
        guard preservation?.isRestoring != true else { return }
        guard let options = pendingConnects[link.peer] else {
            // Nobody here asked for this link (a stale entry on the system's list): let it go.
            transport.removePendingConnection(to: link.peer)
            link.disconnect()
            return
        }
        adopt(link, options: options)
    }

    /// Takes over a link: attaches the bearer and reports the connection.
    func adopt(_ link: any ATTLink, options: ConnectOptions) {
        let p = attach(link, options: options, restoredMTU: nil)
        delegate?.centralManager(self, didConnect: p)
    }

    /// Attaches a bearer on `link` to its peripheral. `restoredMTU`: the link was adopted
    /// after a relaunch and had this ATT MTU negotiated already.
    @discardableResult
    func attach(_ link: any ATTLink, options: ConnectOptions, restoredMTU: Int?) -> Peripheral {
        let p = peripheral(for: link.peer)
        pendingConnects[link.peer] = nil
        connectedOptions[link.peer] = options
        let bearer = ATTBearer(link: link, loop: transport.loop)
        let address = link.peer
        bearer.trace = { [weak self] dir, pdu in self?.trace?(address, dir, pdu) }
        bearer.onDisconnect = { [weak self, weak p] reason in
            guard let self, let p else { return }
            self.linkLost(p, reason: reason)
        }
        p.attach(bearer, restoredMTU: restoredMTU)
        preserve()
        return p
    }

    func linkLost(_ p: Peripheral, reason: DisconnectReason?) {
        let cancelled = p.state == .disconnecting
        p.detach()
        connectedOptions[p.identifier] = nil
        // Reason nil: the link was lost while no process ran, and nobody heard why.
        let error: BluetoothError? = cancelled ? nil : .disconnected(reason ?? .connectionTimeout)
        delegate?.centralManager(self, didDisconnectPeripheral: p, error: error)
        // One request, one connection: unless the app asked again in the callback, the
        // system's auto-connect entry goes too.
        if pendingConnects[p.identifier] == nil {
            transport.removePendingConnection(to: p.identifier)
        } else {
            p.state = .connecting
        }
        preserve()
    }

    func reassertPendingConnects() {
        for address in pendingConnects.keys.sorted() where !transport.pendingConnections.contains(address) {
            // Each was taken before; only a request to our own address throws, and none got this far.
            try? transport.addPendingConnection(to: address)
        }
    }
}
