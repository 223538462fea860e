import LatchkeyATT
import LatchkeyGATT

/// A database with its application delegate, ready to serve (after BlueZ's `ts_small_db`
/// and `ts_large_db_1`). Handles are fixed, so tests can spell PDUs out byte for byte; each
/// fixture checks at build time that the database assigned the handles its table names.
public struct Fixture {
    public let database: GATTDatabase
    public let delegate: FixtureDelegate

    /// Builds a fresh fixture (each server test gets its own, so writes do not leak).
    public static func small() -> Fixture { SmallDB.make() }
    public static func large() -> Fixture { LargeDB.make() }

    /// A fixture that starts as this one is now and changes apart from it: the database is
    /// copied on write (`GATTDatabase.copy`), the delegate's tables copied, its records empty.
    public func copy() -> Fixture {
        let delegate = FixtureDelegate()
        delegate.dynamicValues = self.delegate.dynamicValues
        delegate.refuseWrites = self.delegate.refuseWrites
        return Fixture(database: database.copy(), delegate: delegate)
    }
}

/// One service, seven handles:
///     0x0001  Primary Service 0x180F (Battery)
///     0x0002  Characteristic: read|notify (0x12), value 0x0003, UUID 0x2A19
///     0x0003  Battery Level = 0x64                               read
///     0x0004  CCCD
///     0x0005  User Description "Battery"                         read
///     0x0006  Characteristic: read|write (0x0A), value 0x0007, UUID 0x2A3D
///     0x0007  String = "abc"                                     read, write
public enum SmallDB {
    public static let service: UInt16 = 0x0001
    public static let batteryDeclaration: UInt16 = 0x0002
    public static let batteryLevel: UInt16 = 0x0003
    public static let batteryCCCD: UInt16 = 0x0004
    public static let batteryDescription: UInt16 = 0x0005
    public static let stringDeclaration: UInt16 = 0x0006
    public static let string: UInt16 = 0x0007
    public static let end: UInt16 = 0x0007

    static func make() -> Fixture {
        let db = GATTDatabase()
        let h = try! db.add(GATTService(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], permissions: .read,
                               value: [0x64], descriptors: [.userDescription("Battery")]),
            GATTCharacteristic(uuid: BluetoothUUID(0x2A3D), properties: [.read, .write], permissions: .readWrite,
                               value: Array("abc".utf8)),
        ]))
        precondition(h.service == service && h.endGroup == end && h.characteristicValues == [batteryLevel, string]
                     && h.clientConfigurations == [batteryCCCD, nil], "small fixture moved: \(h)")
        return Fixture(database: db, delegate: FixtureDelegate())
    }
}

/// Six services at fixed start handles, with gaps between them, mixing 16- and 128-bit UUIDs,
/// a secondary service, dynamic values, notify/indicate characteristics and attributes guarded
/// by every kind of permission. The handle map: docs/TESTING.md, "The large fixture database".
public enum LargeDB {
    public static let lockService = BluetoothUUID(string: "8E3F0001-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!
    public static let lockStateUUID = BluetoothUUID(string: "8E3F0002-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!
    public static let lockControlUUID = BluetoothUUID(string: "8E3F0003-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!
    public static let eventLogUUID = BluetoothUUID(string: "8E3F0004-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!
    public static let logFormatUUID = BluetoothUUID(string: "8E3F0005-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!
    public static let secretUUID = BluetoothUUID(string: "8E3F0006-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!
    public static let encryptedUUID = BluetoothUUID(string: "8E3F0007-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!
    public static let authenticatedUUID = BluetoothUUID(string: "8E3F0008-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!
    public static let transferService = BluetoothUUID(string: "8E3F1001-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!
    public static let transferUUID = BluetoothUUID(string: "8E3F1002-2C5D-4B6A-9C1E-7F4A2B3C4D5E")!

    public static let gapService: UInt16 = 0x0001
    public static let deviceName: UInt16 = 0x0003
    public static let appearance: UInt16 = 0x0005
    public static let batteryService: UInt16 = 0x0010
    public static let batteryLevel: UInt16 = 0x0012
    public static let batteryCCCD: UInt16 = 0x0013
    public static let lockServiceHandle: UInt16 = 0x0020
    public static let lockState: UInt16 = 0x0022
    public static let lockStateCCCD: UInt16 = 0x0023
    public static let lockStateDescription: UInt16 = 0x0024
    public static let lockControl: UInt16 = 0x0026
    public static let eventLog: UInt16 = 0x0028
    public static let eventLogDescription: UInt16 = 0x0029
    public static let logFormat: UInt16 = 0x002A
    public static let secret: UInt16 = 0x002C
    public static let encrypted: UInt16 = 0x002E
    public static let authenticated: UInt16 = 0x0030
    public static let secondaryService: UInt16 = 0x0040
    public static let deviceInformationService: UInt16 = 0x0050
    public static let transferServiceHandle: UInt16 = 0x0060
    public static let transfer: UInt16 = 0x0062
    public static let transferCCCD: UInt16 = 0x0063
    public static let lastHandle: UInt16 = 0x0063

    public static let deviceNameValue = Array("Latchkey front door".utf8)
    public static let eventLogValue = (0..<100).map { UInt8($0) }
    /// What the fixture delegate answers for the dynamic lock state.
    public static let lockStateValue: [UInt8] = [0x01]

    static func make() -> Fixture {
        let db = GATTDatabase()
        func add(_ service: GATTService, at start: UInt16, ending end: UInt16) {
            let h = try! db.add(service, startHandle: start)
            precondition(h.service == start && h.endGroup == end, "large fixture moved: \(service.uuid) \(h)")
        }
        add(GATTService(uuid: BluetoothUUID(0x1800), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A00), properties: .read, permissions: .read, value: deviceNameValue),
            GATTCharacteristic(uuid: BluetoothUUID(0x2A01), properties: .read, permissions: .read, value: [0x00, 0x00]),
        ]), at: gapService, ending: 0x0005)
        add(GATTService(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], permissions: .read, value: [0x50]),
        ]), at: batteryService, ending: 0x0013)
        add(GATTService(uuid: lockService, characteristics: [
            GATTCharacteristic(uuid: lockStateUUID, properties: [.read, .notify, .indicate], permissions: .read,
                               descriptors: [.userDescription("Lock state")]),
            GATTCharacteristic(uuid: lockControlUUID, properties: .write, permissions: [.write, .writeEncrypted]),
            GATTCharacteristic(uuid: eventLogUUID, properties: [.read, .write], permissions: .readWrite,
                               value: eventLogValue,
                               descriptors: [.userDescription("Event log"),
                                             GATTDescriptor(uuid: logFormatUUID, value: [0x01])]),
            GATTCharacteristic(uuid: secretUUID, properties: .read, permissions: [], value: [0x00]),
            GATTCharacteristic(uuid: encryptedUUID, properties: [.read, .write],
                               permissions: [.readWrite, .readEncrypted, .writeEncrypted], value: [0x42]),
            GATTCharacteristic(uuid: authenticatedUUID, properties: [.read, .write],
                               permissions: [.readWrite, .readAuthenticated, .writeAuthenticated], value: [0x43]),
        ]), at: lockServiceHandle, ending: 0x0030)
        add(GATTService(uuid: BluetoothUUID(0x1811), isPrimary: false, characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A3D), properties: .read, permissions: .read,
                               value: Array("secondary".utf8)),
        ]), at: secondaryService, ending: 0x0042)
        add(GATTService(uuid: BluetoothUUID(0x180A), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A29), properties: .read, permissions: .read,
                               value: Array("Latchkey".utf8)),
            GATTCharacteristic(uuid: BluetoothUUID(0x2A24), properties: .read, permissions: .read,
                               value: Array("LK-1".utf8)),
        ]), at: deviceInformationService, ending: 0x0054)
        add(GATTService(uuid: transferService, characteristics: [
            GATTCharacteristic(uuid: transferUUID, properties: [.writeWithoutResponse, .notify], permissions: .write),
        ]), at: transferServiceHandle, ending: lastHandle)
        let delegate = FixtureDelegate()
        delegate.dynamicValues[lockState] = lockStateValue
        return Fixture(database: db, delegate: delegate)
    }
}
