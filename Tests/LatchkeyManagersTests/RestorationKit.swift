import LatchkeyATT
@testable import LatchkeyCentral
import LatchkeyGATT
@testable import LatchkeyManagers
@testable import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport

/// One life of a phone application with a restoring central manager, on the Home's phone
/// controller. Its death is `controller.detachApplication()`: the pending list and the
/// links stay with the simulated system.
final class RestoringPhone {
    static let identifier = "phone.central"
    let manager: CentralManager
    let app: PhoneApp
    let sent = SentPDUs()

    init(_ home: Home, storage: any RestorationStorage) {
        app = PhoneApp(loop: home.loop)
        manager = CentralManager(transport: home.phone.controller, delegate: app,
                                 options: ManagerOptions(restoreIdentifier: Self.identifier, restorationStorage: storage))
        manager.trace = { [sent] _, direction, pdu in sent.record(direction, pdu) }
    }

    var lock: Peripheral { manager.retrievePeripherals(withIdentifiers: [Addresses.lock])[0] }
}

/// One life of a lock application with a restoring peripheral manager, on the Home's lock
/// controller. `publish` adds the test service and advertises, as a first life does.
final class RestoringLock {
    static let identifier = "lock.peripheral"
    let manager: PeripheralManager
    let app: LockApp

    /// `fixedServices`: the manager's own services as a version other than this one laid them out.
    init(_ home: Home, storage: any RestorationStorage, fixedServices: FixedServices = .current) {
        app = LockApp(loop: home.loop)
        app.readValues[TestGATT.state] = [0x01]
        manager = PeripheralManager(transport: home.lock.controller, delegate: app,
                                    options: ManagerOptions(restoreIdentifier: Self.identifier, restorationStorage: storage),
                                    genericAccess: GenericAccess(deviceName: "Latchkey"), fixedServices: fixedServices)
    }

    func publish() throws {
        try manager.add(TestGATT.definition)
        manager.startAdvertising(Advertisement(data: AdvertisingData(serviceUUIDs: [TestGATT.service], localName: "Latchkey"),
                                               interval: Timing.fastAdvertisingInterval))
    }

    func characteristic(_ uuid: BluetoothUUID) -> LocalCharacteristic? {
        manager.services.lazy.compactMap { $0.characteristic(uuid) }.first
    }
}

extension Home {
    /// The Home's own phone application never ran: its controller gets a restoring one.
    func replacePhoneApplication(storage: any RestorationStorage) -> RestoringPhone {
        phone.controller.detachApplication()
        let phone = RestoringPhone(self, storage: storage)
        loop.run()
        return phone
    }

    func replaceLockApplication(storage: any RestorationStorage,
                                fixedServices: FixedServices = .current) throws -> RestoringLock {
        lock.controller.detachApplication()
        let lock = RestoringLock(self, storage: storage, fixedServices: fixedServices)
        loop.run()
        try lock.publish()
        loop.run()
        return lock
    }
}

/// A storage whose writes a test can watch, or make fail.
final class WatchedStorage: RestorationStorage {
    let inner = InMemoryRestorationStorage()
    var onSave: (() -> Void)?
    var loadFailure: (any Error)?

    func load<State: PreservedState>(_ type: State.Type, identifier: String) throws -> State? {
        if let loadFailure { throw loadFailure }
        return try inner.load(type, identifier: identifier)
    }
    func save<State: PreservedState>(_ state: State, identifier: String) throws {
        onSave?()
        try inner.save(state, identifier: identifier)
    }
    func remove(_ role: RestorationRole, identifier: String) throws { try inner.remove(role, identifier: identifier) }
    func identifiers(_ role: RestorationRole) throws -> [String] { try inner.identifiers(role) }
}
