import LatchkeyATT
import LatchkeyGATT
import Testing

/// The Generic Access service's definition (Core Vol 3 Part C 12) and where it sits: in front of
/// the Generic Attribute service, as in the Core specification's example database.
@Suite("Generic Access service")
struct GenericAccessServiceTests {
    @Test("GAP at 0x0001–0x0005 and GATT at 0x0006–0x000D hash as the specification's example, name read-only")
    func layoutOfTheSpecificationExample() throws {
        let db = GATTDatabase()
        let gap = try db.add(GenericAccessService.definition(GenericAccess(deviceName: "Front Door", appearance: .doorLock)),
                             startHandle: GenericAccessService.startHandle)
        let gatt = try db.add(GenericAttributeService.definition, startHandle: GenericAttributeService.startHandle)
        #expect(gap.service == 0x0001 && gap.endGroup == 0x0005 && gap.characteristicValues == [0x0003, 0x0005])
        #expect(gatt.service == 0x0006 && gatt.endGroup == 0x000D && gatt.characteristicValues.first == 0x0008)
        // The specification example's hash input, but for Device Name's properties: 0x02
        // (read), where the example's name is writable (0x0A).
        var expected = coreExampleHashInput
        expected[10] = 0x02
        #expect(db.hashInput == expected)
        #expect(db.attribute(at: 0x0003)?.value == Array("Front Door".utf8))
        #expect(db.attribute(at: 0x0005)?.value == [0x08, 0x07])
    }

    @Test("the name is a value, not structure: another name, the same Database Hash")
    func theNameDoesNotChangeTheHash() throws {
        func hash(_ name: String) throws -> [UInt8] {
            let db = GATTDatabase()
            try db.add(GenericAccessService.definition(GenericAccess(deviceName: name, appearance: .doorLock)))
            return db.hash
        }
        #expect(try hash("Front Door") == hash("Back Door"))
    }

    @Test("Appearance: Access Control (0x01C), Door Lock (0x08) is 0x0708")
    func doorLockAppearance() {
        #expect(Appearance.doorLock.rawValue == 0x0708)
        #expect(Appearance.doorLock.bytes == [0x08, 0x07])
        #expect(Appearance(category: 0x01C, subcategory: 0x04).rawValue == 0x0704)  // Access Lock
        #expect(Appearance.unknown.bytes == [0x00, 0x00])
    }
}
