import LatchkeyManagers
import LatchkeyTransport

/// The always-on part of a central agent: installed as the central manager's and its
/// peripherals' delegate, it passes events to the application's delegates through an
/// `ApplicationGate`, raises the connect requests' alerts while the application layer
/// is suspended, and keeps the pending connect held by the system while it cannot ask.
///
/// The application's delegates are the ones set before the gate was installed; they are
/// held weakly, as the managers hold theirs.
public final class CentralGate: CentralManagerDelegate, PeripheralDelegate {
    public let central: CentralManager
    public let gate: ApplicationGate
    public var alerts: (any ConnectionAlertSink)?

    private weak var app: (any CentralManagerDelegate)?
    private var peripheralApps: [BluetoothAddress: WeakPeripheralDelegate] = [:]
    /// Options of the request behind each live link (the manager forgets them on loss).
    private var linkOptions: [BluetoothAddress: ConnectOptions] = [:]

    private struct WeakPeripheralDelegate { weak var value: (any PeripheralDelegate)? }

    public init(central: CentralManager, peripherals: [Peripheral] = [], gate: ApplicationGate,
                alerts: (any ConnectionAlertSink)? = nil) {
        self.central = central
        self.gate = gate
        self.alerts = alerts
        app = central.delegate
        central.delegate = self
        for p in peripherals { interpose(p) }
    }

    /// Routes `peripheral`'s callbacks through the gate (its current delegate is the app's).
    public func interpose(_ peripheral: Peripheral) {
        guard peripheral.delegate !== self else { return }
        peripheralApps[peripheral.identifier] = WeakPeripheralDelegate(value: peripheral.delegate)
        peripheral.delegate = self
        if peripheral.state == .connected, let o = central.connectedOptions[peripheral.identifier] {
            linkOptions[peripheral.identifier] = o
        }
    }

    // MARK: Mode and suspension

    public var mode: ExecutionMode { gate.mode }

    /// Switches the central role's mode: the manager's radio timing and rules, and the gate.
    public func setMode(_ mode: ExecutionMode) throws(BluetoothError) {
        try central.setExecutionMode(mode)
        gate.setMode(mode)
    }

    /// Suspends the application layer. A foreground-only app cannot scan: its scan ends
    /// (the stop is queued for it like any other event). Links and pending connects stay.
    public func suspend() {
        gate.suspend()
        if gate.mode == .foreground { central.stopScan() }
    }

    public func resume() { gate.resume() }

    // MARK: Alerts

    private func alert(_ event: ConnectionAlert.Event, _ peer: BluetoothAddress, options: ConnectOptions?,
                       detail: String = "") {
        guard gate.isSuspended, let options, options.wantsAlert(for: event) else { return }
        alerts?.raise(ConnectionAlert(device: peer, event: event, time: gate.loop.now, detail: detail))
    }

    // MARK: CentralManagerDelegate

    /// Restoration comes first and in order with the rest: queued like any event while
    /// suspended, so `willRestoreState` still precedes the first state update.
    public func centralManager(_ central: CentralManager, willRestoreState state: RestoredCentralState) {
        gate.deliver("restore state") { [weak self] in self?.app?.centralManager(central, willRestoreState: state) }
    }

    public func centralManager(_ central: CentralManager, didFailToPreserveState error: any Error) {
        gate.deliver("preservation failed") { [weak self] in self?.app?.centralManager(central, didFailToPreserveState: error) }
    }

    public func centralManager(_ central: CentralManager, didRefuse refusal: TransportRefusal) {
        gate.deliver("refused \(refusal.request)") { [weak self] in self?.app?.centralManager(central, didRefuse: refusal) }
    }

    public func centralManagerDidUpdateState(_ central: CentralManager) {
        let state = central.state
        gate.deliver("state \(state.rawValue)") { [weak self] in
            guard let self else { return }
            self.app?.centralManagerDidUpdateState(central)
        }
    }

    public func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral,
                               advertisementData: AdvertisingData, rssi: Int8) {
        gate.deliver("discovered \(peripheral.identifier)") { [weak self] in
            self?.app?.centralManager(central, didDiscover: peripheral, advertisementData: advertisementData, rssi: rssi)
        }
    }

    public func centralManager(_ central: CentralManager, didStopScan reason: ScanStopReason) {
        gate.deliver("scan stopped (\(reason.rawValue))") { [weak self] in
            self?.app?.centralManager(central, didStopScan: reason)
        }
    }

    public func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        let peer = peripheral.identifier
        let options = central.connectedOptions[peer]
        linkOptions[peer] = options
        alert(.connection, peer, options: options)
        gate.deliver("connected \(peer)") { [weak self] in
            self?.app?.centralManager(central, didConnect: peripheral)
            // An app that sets the peripheral's delegate here (as Core Bluetooth apps do)
            // is put back behind the gate.
            if let self, peripheral.delegate !== self { self.interpose(peripheral) }
        }
    }

    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral,
                               error: BluetoothError?) {
        let peer = peripheral.identifier
        let options = linkOptions.removeValue(forKey: peer)
        alert(.disconnection, peer, options: options, detail: error.map { "\($0)" } ?? "cancelled")
        gate.deliver("disconnected \(peer)") { [weak self] in
            self?.app?.centralManager(central, didDisconnectPeripheral: peripheral, error: error)
        }
        // A held app cannot ask again from this callback, so the system keeps its request
        // (Core Bluetooth's pending connect is the system's, not the suspended app's).
        if gate.isHolding, error != nil, let options, central.pendingConnects[peer] == nil {
            // The same request was taken before; connect throws only for a request to our own address.
            try? central.connect(peripheral, options: options)
        }
    }

    // MARK: PeripheralDelegate

    private func forward(_ peripheral: Peripheral, _ label: String, _ call: @escaping (any PeripheralDelegate) -> Void) {
        let target = peripheralApps[peripheral.identifier]
        gate.deliver("\(label) \(peripheral.identifier)") {
            if let app = target?.value { call(app) }
        }
    }

    public func peripheral(_ peripheral: Peripheral, didDiscoverServices error: BluetoothError?) {
        forward(peripheral, "services discovered") { $0.peripheral(peripheral, didDiscoverServices: error) }
    }

    public func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: RemoteService,
                           error: BluetoothError?) {
        forward(peripheral, "characteristics discovered") {
            $0.peripheral(peripheral, didDiscoverCharacteristicsFor: service, error: error)
        }
    }

    public func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        forward(peripheral, "descriptors discovered") {
            $0.peripheral(peripheral, didDiscoverDescriptorsFor: characteristic, error: error)
        }
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        if characteristic.isNotifying {
            alert(.notification, peripheral.identifier, options: linkOptions[peripheral.identifier],
                  detail: "\(characteristic.uuid)")
        }
        // A later value overwrites `characteristic.value`: each queued delivery shows its own.
        let value = characteristic.value
        forward(peripheral, "value \(characteristic.uuid)") {
            characteristic.value = value
            $0.peripheral(peripheral, didUpdateValueFor: characteristic, error: error)
        }
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: RemoteDescriptor, error: BluetoothError?) {
        let value = descriptor.value
        forward(peripheral, "descriptor value") {
            descriptor.value = value
            $0.peripheral(peripheral, didUpdateValueFor: descriptor, error: error)
        }
    }

    public func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        forward(peripheral, "written \(characteristic.uuid)") {
            $0.peripheral(peripheral, didWriteValueFor: characteristic, error: error)
        }
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        forward(peripheral, "notification state \(characteristic.uuid)") {
            $0.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: error)
        }
    }

    public func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral) {
        forward(peripheral, "ready to write") { $0.peripheralIsReady(toSendWriteWithoutResponse: peripheral) }
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateMTU mtu: Int) {
        forward(peripheral, "mtu \(mtu)") { $0.peripheral(peripheral, didUpdateMTU: mtu) }
    }

    public func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [RemoteService]) {
        forward(peripheral, "services modified") { $0.peripheral(peripheral, didModifyServices: invalidatedServices) }
    }

    public func peripheral(_ peripheral: Peripheral, didReceiveInvalidServiceChange value: [UInt8]) {
        forward(peripheral, "invalid service change") { $0.peripheral(peripheral, didReceiveInvalidServiceChange: value) }
    }
}
