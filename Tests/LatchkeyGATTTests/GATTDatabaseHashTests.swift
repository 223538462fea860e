import LatchkeyATT
import LatchkeyGATT
import Testing

/// The Database Hash's input and the changed range a Service Changed indication names.
@Suite("GATT database: hash and layout changes")
struct GATTDatabaseHashTests {
    /// The GAP service of the Core specification's hash example (handles 1–5).
    static let gap = GATTService(uuid: BluetoothUUID(0x1800), characteristics: [
        GATTCharacteristic(uuid: BluetoothUUID(0x2A00), properties: [.read, .write], permissions: .readWrite,
                           value: Array("Latchkey".utf8)),
        GATTCharacteristic(uuid: BluetoothUUID(0x2A01), properties: [.read], permissions: .read, value: [0, 0]),
    ])

    static let battery = GATTService(uuid: BluetoothUUID(0x180F), characteristics: [
        GATTCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], permissions: .read, value: [0x64],
                           descriptors: [.userDescription("Battery")]),
    ])

    /// The Core specification's example database starts with GAP (1–5) and GATT (6–13);
    /// built from definitions, ours gives the same hash input for those handles: declarations
    /// with their values, the CCCD by handle and type only, no characteristic values.
    @Test("the hash input matches the Core specification's example for GAP and GATT")
    func hashInputMatchesTheSpecificationExample() throws {
        let db = GATTDatabase()
        try db.add(Self.gap, startHandle: 1)
        try db.add(GenericAttributeService.definition, startHandle: 6)
        #expect(db.hashInput == coreExampleHashInput)
    }

    @Test("a User Description enters the hash by handle and type; characteristic values not at all")
    func whatEntersTheHash() throws {
        let db = GATTDatabase()
        let h = try db.add(Self.battery)
        let input = db.hashInput
        #expect(input.suffix(4) == [0x05, 0x00, 0x01, 0x29], "the description's handle and type, not its text")
        let hash = db.hash
        #expect(hash.count == 16)
        db.setValue([0x10], at: h.characteristicValues[0])
        #expect(db.hash == hash, "a value is not structure")
    }

    @Test("the hash is AES-CMAC of the input, least significant octet first, and follows the structure")
    func hashFollowsTheStructure() throws {
        let db = GATTDatabase()
        try db.add(GenericAttributeService.definition, startHandle: 1)
        let before = db.hash
        #expect(before == Array(AESCMAC.mac(key: [UInt8](repeating: 0, count: 16), message: db.hashInput).reversed()))
        let added = try db.add(Self.battery)
        #expect(db.hash != before)
        db.removeService(at: added.service)
        #expect(db.hash == before, "the same structure, the same hash")
    }

    @Test("an unchanged layout is no change")
    func unchanged() throws {
        let a = GATTDatabase(), b = GATTDatabase()
        for db in [a, b] {
            try db.add(GenericAttributeService.definition, startHandle: 1)
            try db.add(Self.battery)
        }
        b.setValue([0x01], at: 11)
        #expect(GATTDatabase.changedRange(from: a.layout, to: b.layout) == nil)
    }

    /// The Generic Attribute service and Battery (9–13), then the same with `change` applied to
    /// Battery.
    private func batteryLayouts(_ change: (inout GATTService) -> Void) throws -> (old: [GATTLayoutEntry], new: [GATTLayoutEntry]) {
        let old = GATTDatabase(), new = GATTDatabase()
        try old.add(GenericAttributeService.definition, startHandle: 1)
        try new.add(GenericAttributeService.definition, startHandle: 1)
        try old.add(Self.battery)
        var changed = Self.battery
        change(&changed)
        try new.add(changed)
        return (old.layout, new.layout)
    }

    private static let firmware = GATTCharacteristic(uuid: BluetoothUUID(0x2A26), properties: [.read], permissions: .read,
                                                     value: [1])

    @Test("a characteristic inserted at the front of a service: the whole service, in both layouts")
    func insertedCharacteristic() throws {
        let (old, new) = try batteryLayouts { $0.characteristics.insert(Self.firmware, at: 0) }  // 9–15
        #expect(GATTDatabase.changedRange(from: old, to: new) == 9...15,
                "the declaration did not change, but a client rediscovers what overlaps the range")
        #expect(GATTDatabase.changedRange(from: new, to: old) == 9...15)
    }

    @Test("a characteristic appended behind a service's end still names the service's start")
    func appendedCharacteristic() throws {
        let (old, new) = try batteryLayouts { $0.characteristics.append(Self.firmware) }
        #expect(GATTDatabase.changedRange(from: old, to: new) == 9...15)
    }

    @Test("a service added after others names only its own handles")
    func addedService() throws {
        let old = GATTDatabase()
        try old.add(GenericAttributeService.definition, startHandle: 1)
        try old.add(Self.gap)  // 9–13
        let new = GATTDatabase()
        try new.add(GenericAttributeService.definition, startHandle: 1)
        try new.add(Self.gap)
        try new.add(Self.battery)  // 14–18
        #expect(GATTDatabase.changedRange(from: old.layout, to: new.layout) == 14...18)
    }
}
