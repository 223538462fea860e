import LatchkeyATT
import LatchkeyCentral
import LatchkeyLockProtocol
import LatchkeyManagers

/// The lock's peripheral as the lock service's setup sees it (`LockServicePeripheral`).
extension Peripheral: LockServicePeripheral {
    var isConnected: Bool { state == .connected }
    var hasLockService: Bool { service(LockServiceUUID.service) != nil }
    var lockCharacteristicsKnown: Bool { service(LockServiceUUID.service)?.characteristics != nil }

    func lockCharacteristic(_ uuid: BluetoothUUID) -> RemoteCharacteristic? {
        service(LockServiceUUID.service)?.characteristic(uuid)
    }

    func discoverLockService() {
        discoverServices([LockServiceUUID.service])
    }

    func discoverLockCharacteristics() {
        guard let service = service(LockServiceUUID.service) else { return }
        discoverCharacteristics(nil, for: service)
    }
}
