import LatchkeyATT
import LatchkeyCentral
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyDaemons
import LatchkeyPeripheral
import LatchkeySim
import LatchkeyStore
import LatchkeyTransport
import Testing

/// The managers' preserved state through the SQLite store: what a relaunch reads back.
@Suite struct StoredRestorationStorageTests {
    static let service = BluetoothUUID(0x180F)
    static let level = BluetoothUUID(0x2A19)

    final class Restored: CentralManagerDelegate {
        var peripherals: [Peripheral] = []
        func centralManagerDidUpdateState(_ central: CentralManager) {}
        func centralManager(_ central: CentralManager, willRestoreState state: RestoredCentralState) {
            peripherals = state.peripherals
        }
    }

    @Test func aCentralsLinkAndCacheComeBackThroughTheFile() throws {
        let fixture = StoreFixture()
        let loop = ManualEventLoop()
        let air = SimulatedAir(loop: loop, seed: 3)
        let lockController = air.addDevice(address: BluetoothAddress(0xD00D00000001), position: 0)
        let phoneController = air.addDevice(address: BluetoothAddress(0x0F0E00000002), position: 1)
        let lock = PeripheralManager(transport: lockController)
        try lock.add(GATTService(uuid: Self.service, characteristics: [
            GATTCharacteristic(uuid: Self.level, properties: [.read, .notify], permissions: .read, value: [90]),
        ]))
        lock.startAdvertising(Advertisement(data: AdvertisingData(serviceUUIDs: [Self.service]),
                                            interval: .milliseconds(20)))
        let options = ManagerOptions(restoreIdentifier: "phone.central", restorationStorage: try fixture.open().restorationStorage())
        var first: CentralManager? = CentralManager(transport: phoneController, options: options)
        loop.run()
        let p = first!.retrievePeripherals(withIdentifiers: [lockController.address])[0]
        try first!.connect(p, options: ConnectOptions(notifyOnDisconnection: true))
        #expect(loop.advance(until: { p.state == .connected && p.mtu > 23 }, limit: .seconds(5)))
        p.discoverServices()
        #expect(loop.advance(until: { p.services != nil }, limit: .seconds(5)))
        p.discoverCharacteristics(for: p.service(Self.service)!)
        #expect(loop.advance(until: { p.service(Self.service)?.characteristics != nil }, limit: .seconds(5)))
        phoneController.detachApplication()
        first = nil

        let reopened = try fixture.open().restorationStorage()
        let preserved = try #require(try reopened.load(CentralRestorationState.self, identifier: "phone.central"))
        #expect(preserved.peripherals.map(\.connected) == [true])
        #expect(preserved.peripherals.first?.options == ConnectOptions(notifyOnDisconnection: true))
        #expect(RestorationRegistry(storage: reopened).identifiersWithPendingWork(CentralRestorationState.self) == ["phone.central"])

        let delegate = Restored()
        let second = CentralManager(transport: phoneController, delegate: delegate,
                                    options: ManagerOptions(restoreIdentifier: "phone.central", restorationStorage: reopened))
        loop.run()
        let restored = try #require(delegate.peripherals.first)
        #expect(restored.state == .connected)
        #expect(restored.service(Self.service)?.characteristic(Self.level)?.properties == [.read, .notify])
        #expect(restored.mtu == p.mtu)
        withExtendedLifetime(second) {}
    }

    @Test func anEntryOfAnotherVersionIsRefusedNotMisread() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.restoration().put(RestorationEntry(role: .central, identifier: "phone.central", version: 99,
                                                     payload: Array("{}".utf8)))
        #expect(throws: RestorationStorageError.unsupportedVersion(identifier: "phone.central", found: 99, expected: 1)) {
            _ = try store.restorationStorage().load(CentralRestorationState.self, identifier: "phone.central")
        }
        #expect(RestorationRegistry(storage: store.restorationStorage()).identifiersWithPendingWork(CentralRestorationState.self).isEmpty)
    }
}
