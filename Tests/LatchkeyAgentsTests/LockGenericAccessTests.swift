import LatchkeyGATT
import LatchkeyManagers
import Testing

/// The lock's Generic Access service: its configured name and the Door Lock appearance, in the
/// lock's own database, so every transport serves it.
@Suite struct LockGenericAccessTests {
    @Test func theGenericAccessServiceCarriesTheConfiguredNameAndTheDoorLockAppearance() throws {
        let w = try AgentWorld()
        w.lockName = "Front Door"
        w.killLock()
        try w.restartLock()
        let database = w.lock.peripheral.database
        #expect(database.attribute(at: 0x0001)?.value == [0x00, 0x18], "Generic Access first")
        #expect(database.attribute(at: 0x0003)?.value == Array("Front Door".utf8), "Device Name")
        #expect(database.attribute(at: 0x0005)?.value == [0x08, 0x07], "Appearance 0x0708")
        #expect(w.lock.peripheral.genericAccess == GenericAccess(deviceName: "Front Door", appearance: .doorLock))
    }
}
