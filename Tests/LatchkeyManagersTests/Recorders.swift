import LatchkeyATT
import LatchkeyCentral
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTransport

/// Everything a central-side application can be told, in one enum so a test compares whole
/// histories (the way swift-nio's tests log a DummyResolver's calls).
enum CentralEvent: Equatable {
    case state(ManagerState)
    case discovered(BluetoothAddress, name: String?)
    case stoppedScan(ScanStopReason)
    case connected(BluetoothAddress)
    case disconnected(BluetoothAddress, BluetoothError?)
    // PeripheralDelegate
    case discoveredServices([BluetoothUUID], BluetoothError?)
    case discoveredCharacteristics(BluetoothUUID, [BluetoothUUID], BluetoothError?)
    case discoveredDescriptors(BluetoothUUID, [BluetoothUUID], BluetoothError?)
    case value(BluetoothUUID, [UInt8]?, BluetoothError?)
    case descriptorValue(BluetoothUUID, [UInt8]?, BluetoothError?)
    case wrote(BluetoothUUID, BluetoothError?)
    case notifying(BluetoothUUID, Bool, BluetoothError?)
    case readyToWriteWithoutResponse
    case mtu(Int)
    case modifiedServices([BluetoothUUID])
    case invalidServiceChange([UInt8])
    // Restoration
    case restored([BluetoothAddress: Peripheral.State], scan: [BluetoothUUID]?)
    case preserveFailed
}

/// The phone application: a central manager delegate and the delegate of every peripheral
/// it connects. Records each callback with the loop time it arrived at.
final class PhoneApp: CentralManagerDelegate, PeripheralDelegate {
    let loop: ManualEventLoop
    private(set) var log: [(time: Instant, event: CentralEvent)] = []
    /// Runs inside `didDisconnectPeripheral`, where a Core Bluetooth app asks to connect again.
    var onDisconnect: ((CentralManager, Peripheral, BluetoothError?) -> Void)?

    init(loop: ManualEventLoop) { self.loop = loop }

    var events: [CentralEvent] { log.map(\.event) }
    func times(of match: (CentralEvent) -> Bool) -> [Instant] { log.filter { match($0.event) }.map(\.time) }
    func count(of match: (CentralEvent) -> Bool) -> Int { log.count { match($0.event) } }

    var connects: [BluetoothAddress] {
        events.compactMap { if case .connected(let a) = $0 { a } else { nil } }
    }
    var disconnects: [(BluetoothAddress, BluetoothError?)] {
        events.compactMap { if case .disconnected(let a, let e) = $0 { (a, e) } else { nil } }
    }
    var discoveries: [BluetoothAddress] {
        events.compactMap { if case .discovered(let a, _) = $0 { a } else { nil } }
    }
    var scanStops: [ScanStopReason] {
        events.compactMap { if case .stoppedScan(let r) = $0 { r } else { nil } }
    }
    /// Values delivered for `uuid` without error (reads and notifications), in order.
    func values(of uuid: BluetoothUUID) -> [[UInt8]] {
        events.compactMap { if case .value(uuid, let v?, nil) = $0 { v } else { nil } }
    }

    private func record(_ event: CentralEvent) { log.append((loop.now, event)) }

    // MARK: CentralManagerDelegate

    func centralManagerDidUpdateState(_ central: CentralManager) { record(.state(central.state)) }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral,
                        advertisementData: AdvertisingData, rssi: Int8) {
        record(.discovered(peripheral.identifier, name: advertisementData.localName))
    }

    func centralManager(_ central: CentralManager, didStopScan reason: ScanStopReason) { record(.stoppedScan(reason)) }

    func centralManager(_ central: CentralManager, willRestoreState state: RestoredCentralState) {
        for p in state.peripherals { p.delegate = self }
        record(.restored(Dictionary(uniqueKeysWithValues: state.peripherals.map { ($0.identifier, $0.state) }),
                         scan: state.scanServices))
    }

    func centralManager(_ central: CentralManager, didFailToPreserveState error: any Error) { record(.preserveFailed) }

    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        peripheral.delegate = self
        record(.connected(peripheral.identifier))
    }

    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: BluetoothError?) {
        record(.disconnected(peripheral.identifier, error))
        onDisconnect?(central, peripheral, error)
    }

    // MARK: PeripheralDelegate

    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: BluetoothError?) {
        record(.discoveredServices((peripheral.services ?? []).map(\.uuid), error))
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: RemoteService, error: BluetoothError?) {
        record(.discoveredCharacteristics(service.uuid, (service.characteristics ?? []).map(\.uuid), error))
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: RemoteCharacteristic,
                    error: BluetoothError?) {
        record(.discoveredDescriptors(characteristic.uuid, (characteristic.descriptors ?? []).map(\.uuid), error))
    }

    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic, error: BluetoothError?) {
        record(.value(characteristic.uuid, error == nil ? characteristic.value : nil, error))
    }

    func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: RemoteDescriptor, error: BluetoothError?) {
        record(.descriptorValue(descriptor.uuid, error == nil ? descriptor.value : nil, error))
    }

    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic, error: BluetoothError?) {
        record(.wrote(characteristic.uuid, error))
    }

    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: RemoteCharacteristic,
                    error: BluetoothError?) {
        record(.notifying(characteristic.uuid, characteristic.isNotifying, error))
    }

    func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral) { record(.readyToWriteWithoutResponse) }

    func peripheral(_ peripheral: Peripheral, didUpdateMTU mtu: Int) { record(.mtu(mtu)) }

    func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [RemoteService]) {
        record(.modifiedServices(invalidatedServices.map(\.uuid)))
    }

    func peripheral(_ peripheral: Peripheral, didReceiveInvalidServiceChange value: [UInt8]) {
        record(.invalidServiceChange(value))
    }
}

/// Everything a peripheral-side application can be told.
enum LockEvent: Equatable {
    case state(ManagerState)
    case added(BluetoothUUID, BluetoothError?)
    case startedAdvertising(BluetoothError?)
    case read(BluetoothAddress, BluetoothUUID)
    case write(BluetoothAddress, BluetoothUUID, [UInt8], withResponse: Bool)
    case subscribed(BluetoothAddress, BluetoothUUID)
    case unsubscribed(BluetoothAddress, BluetoothUUID)
    case readyToUpdateSubscribers
    case connected(BluetoothAddress)
    case disconnected(BluetoothAddress, DisconnectReason)
    case restored(services: [BluetoothUUID], centrals: [BluetoothAddress], advertising: Bool)
    case servicesChanged(ClosedRange<UInt16>, centrals: [BluetoothAddress])
}

/// The lock application: answers reads from `readValues`, accepts writes unless
/// `writeError` is set, and records every callback.
final class LockApp: PeripheralManagerDelegate {
    let loop: ManualEventLoop
    private(set) var log: [(time: Instant, event: LockEvent)] = []
    var readValues: [BluetoothUUID: [UInt8]] = [:]
    /// Returned for every write: the ATT error a lock would send to refuse a command.
    var writeError: ATTErrorCode?
    /// Runs inside `peripheralManagerIsReady(toUpdateSubscribers:)`, where a sender resumes.
    var onReady: (() -> Void)?
    /// `maximumUpdateValueLength` of each central at the moment it connected.
    private(set) var updateLengthAtConnect: [Int] = []
    /// Runs inside `willRestoreState`, where a relaunched application of another version
    /// replaces the services it finds restored.
    var onWillRestore: ((PeripheralManager, RestoredPeripheralState) -> Void)?

    init(loop: ManualEventLoop) { self.loop = loop }

    var events: [LockEvent] { log.map(\.event) }
    var readyCount: Int { log.count { $0.event == .readyToUpdateSubscribers } }
    var disconnects: [DisconnectReason] {
        events.compactMap { if case .disconnected(_, let r) = $0 { r } else { nil } }
    }

    private func record(_ event: LockEvent) { log.append((loop.now, event)) }

    func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) { record(.state(peripheral.state)) }

    func peripheralManager(_ peripheral: PeripheralManager, willRestoreState state: RestoredPeripheralState) {
        record(.restored(services: state.services.map(\.uuid), centrals: state.centrals.map(\.identifier),
                         advertising: state.advertisement != nil))
        onWillRestore?(peripheral, state)
    }

    func peripheralManager(_ peripheral: PeripheralManager, didChangeServicesIn range: ClosedRange<UInt16>,
                           centrals: [Central]) {
        record(.servicesChanged(range, centrals: centrals.map(\.identifier)))
    }

    func peripheralManager(_ peripheral: PeripheralManager, didAdd service: LocalService, error: BluetoothError?) {
        record(.added(service.uuid, error))
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: BluetoothError?) {
        record(.startedAdvertising(error))
    }

    func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ReadRequest) -> Result<[UInt8], ATTErrorCode> {
        record(.read(request.central.identifier, request.characteristic.uuid))
        guard let value = readValues[request.characteristic.uuid] else { return .failure(.readNotPermitted) }
        return .success(value)
    }

    func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite request: WriteRequest) -> ATTErrorCode? {
        record(.write(request.central.identifier, request.characteristic.uuid, request.value,
                      withResponse: request.withResponse))
        return writeError
    }

    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: LocalCharacteristic) {
        record(.subscribed(central.identifier, characteristic.uuid))
    }

    func peripheralManager(_ peripheral: PeripheralManager, central: Central,
                           didUnsubscribeFrom characteristic: LocalCharacteristic) {
        record(.unsubscribed(central.identifier, characteristic.uuid))
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager) {
        record(.readyToUpdateSubscribers)
        onReady?()
    }

    func peripheralManager(_ peripheral: PeripheralManager, didConnect central: Central) {
        updateLengthAtConnect.append(central.maximumUpdateValueLength)
        record(.connected(central.identifier))
    }

    func peripheralManager(_ peripheral: PeripheralManager, didDisconnect central: Central, reason: DisconnectReason) {
        record(.disconnected(central.identifier, reason))
    }
}
