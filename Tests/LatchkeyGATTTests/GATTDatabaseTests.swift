import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("GATT database")
struct GATTDatabaseTests {
    static func lockService() -> GATTService {
        GATTService(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], permissions: .read,
                               value: [0x64], descriptors: [.userDescription("Battery")]),
            GATTCharacteristic(uuid: BluetoothUUID(0x2A3D), properties: [.read, .write], permissions: .readWrite, value: []),
        ])
    }

    @Test("handles run from 0x0001: declaration, value, CCCD only for notify/indicate, then descriptors")
    func handleLayout() throws {
        let db = GATTDatabase()
        let h = try db.add(Self.lockService())
        #expect(h.service == 1 && h.endGroup == 7)
        #expect(h.characteristicValues == [3, 7])
        #expect(h.clientConfigurations == [4, nil])
        #expect(db.attributes.map(\.handle) == [1, 2, 3, 4, 5, 6, 7])
        #expect(db.attributes.map(\.type) == [.primaryService, .characteristic, BluetoothUUID(0x2A19),
                                              .clientCharacteristicConfiguration, .characteristicUserDescription,
                                              .characteristic, BluetoothUUID(0x2A3D)])
        // Declaration value: properties, value handle, UUID (Vol 3, Part G, 3.3.1).
        #expect(db.attribute(at: 2)?.value == [0x12, 0x03, 0x00, 0x19, 0x2A])
        #expect(db.attribute(at: 1)?.value == [0x0F, 0x18])
        #expect(db.attribute(at: 1)?.kind == .service(endGroup: 7))
    }

    @Test("the same definitions give the same handles, so a client's cache stays valid")
    func stableHandles() throws {
        let a = Fixture.large().database, b = Fixture.large().database
        #expect(a.attributes.map(\.handle) == b.attributes.map(\.handle))
        #expect(a.attributes.map(\.type) == b.attributes.map(\.type))
        let c = GATTDatabase(), d = GATTDatabase()
        try c.add(Self.lockService()); try c.add(Self.lockService())
        try d.add(Self.lockService()); try d.add(Self.lockService())
        #expect(c.attributes.map(\.handle) == d.attributes.map(\.handle))
        #expect(c.nextHandle == 15)
    }

    @Test("a copy starts with the same attributes and hash, and writes to either stay apart")
    func copiesAreIndependent() throws {
        let original = Fixture.large().database
        let hash = original.hash
        let copy = original.copy()
        #expect(copy.attributes.map(\.handle) == original.attributes.map(\.handle))
        #expect(copy.attributes.map(\.value) == original.attributes.map(\.value))
        #expect(copy.hash == hash)
        copy.setValue([0xEE], at: LargeDB.eventLog)
        original.setValue([0xDD], at: LargeDB.batteryLevel)
        #expect(copy.attribute(at: LargeDB.eventLog)?.value == [0xEE])
        #expect(original.attribute(at: LargeDB.eventLog)?.value == LargeDB.eventLogValue)
        #expect(copy.attribute(at: LargeDB.batteryLevel)?.value == [0x50])
        // A service added to the copy changes its structure and hash, not the original's.
        try copy.add(Self.lockService(), startHandle: 0x0070)
        #expect(copy.hash != hash)
        #expect(original.hash == hash)
        #expect(original.attribute(at: 0x0070) == nil)
    }

    @Test("a service can be placed at a start handle; overlaps and overflows are refused")
    func startHandles() throws {
        let db = GATTDatabase()
        #expect(try db.add(Self.lockService(), startHandle: 0x0100).service == 0x0100)
        #expect(throws: GATTDatabaseError.self) { try db.add(Self.lockService(), startHandle: 0x0104) }
        #expect(throws: GATTDatabaseError.self) { try db.add(Self.lockService(), startHandle: 0xFFFA) }
        #expect(throws: GATTDatabaseError.self) { try db.add(Self.lockService(), startHandle: 0) }
        #expect(try db.add(Self.lockService(), startHandle: 0xFFF9).endGroup == 0xFFFF)
        #expect(try db.add(Self.lockService(), startHandle: 0x0010).service == 0x0010)
        #expect(db.attributes.map(\.handle) == db.attributes.map(\.handle).sorted())
    }

    @Test("removing a service leaves every other handle where it was")
    func removeKeepsHandles() throws {
        let db = GATTDatabase()
        try db.add(Self.lockService())
        let second = try db.add(Self.lockService())
        try db.add(Self.lockService())
        let before = db.attributes.map(\.handle).filter { $0 < second.service || $0 > second.endGroup }
        db.removeService(at: second.service)
        #expect(db.attributes.map(\.handle) == before)
        #expect(db.attribute(at: second.characteristicValues[0]) == nil)
        db.removeService(at: 3)  // not a service declaration: nothing happens
        #expect(db.attributes.map(\.handle) == before)
    }

    @Test("range lookups skip gaps between services")
    func rangesAcrossGaps() {
        let db = Fixture.large().database
        #expect(db.attributes(in: 0x0006...0x000F).isEmpty)
        #expect(db.attributes(in: 0x0005...0x0010).map(\.handle) == [0x0005, 0x0010])
        #expect(db.attributes(in: 0xFF00...0xFFFF).isEmpty)
        #expect(db.attribute(at: 0x0006) == nil)
    }
}
