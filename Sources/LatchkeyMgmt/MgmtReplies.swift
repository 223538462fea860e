import LatchkeyTransport

// The Return_Parameters of the commands we send, decoded from a Command Complete.

/// Read Controller Index List: Num_Controllers (u16), Controller_Index[i] (u16).
public struct ControllerIndexList: Hashable, Sendable {
    public var indices: [MgmtIndex]

    public init(indices: [MgmtIndex]) { self.indices = indices }

    public init(decoding parameters: [UInt8]) throws(MgmtError) {
        var r = ByteReader(parameters, what: "Read Controller Index List reply")
        let count = Int(try r.u16())
        var indices: [MgmtIndex] = []
        for _ in 0..<count { indices.append(MgmtIndex(try r.u16())) }
        self.indices = indices
    }
}

/// Read Controller Information: the controller's own address and settings.
public struct ControllerInfo: Hashable, Sendable {
    /// The public address (the identity address; all zero on an LE-only controller that
    /// needs a static address configured first).
    public var address: BluetoothAddress
    public var bluetoothVersion: UInt8
    public var manufacturer: UInt16
    public var supportedSettings: MgmtSettings
    public var currentSettings: MgmtSettings
    public var name: String

    public init(address: BluetoothAddress, bluetoothVersion: UInt8 = 0, manufacturer: UInt16 = 0,
                supportedSettings: MgmtSettings, currentSettings: MgmtSettings, name: String = "") {
        self.address = address
        self.bluetoothVersion = bluetoothVersion
        self.manufacturer = manufacturer
        self.supportedSettings = supportedSettings
        self.currentSettings = currentSettings
        self.name = name
    }

    /// Name field: 249 octets, NUL-terminated; Short_Name: 11 octets.
    static let nameLength = 249, shortNameLength = 11

    public init(decoding parameters: [UInt8]) throws(MgmtError) {
        var r = ByteReader(parameters, what: "Read Controller Information reply")
        address = BluetoothAddress(try MgmtDeviceAddress.readAddress(from: &r))
        bluetoothVersion = try r.u8()
        manufacturer = try r.u16()
        supportedSettings = MgmtSettings(rawValue: try r.u32())
        currentSettings = MgmtSettings(rawValue: try r.u32())
        _ = try r.bytes(3)  // Class_Of_Device
        name = String(decoding: try r.bytes(Self.nameLength).prefix { $0 != 0 }, as: UTF8.self)
        _ = try r.bytes(Self.shortNameLength)
    }

    /// The reply bytes, for tests that play the kernel.
    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.bytes(address.littleEndianBytes)
        w.u8(bluetoothVersion)
        w.u16(manufacturer)
        w.u32(supportedSettings.rawValue)
        w.u32(currentSettings.rawValue)
        w.bytes([0, 0, 0])
        let nameBytes = Array(name.utf8.prefix(Self.nameLength - 1))
        w.bytes(nameBytes + [UInt8](repeating: 0, count: Self.nameLength - nameBytes.count))
        w.bytes([UInt8](repeating: 0, count: Self.shortNameLength))
        return w.bytes
    }
}

/// The short replies, by the command they answer.
public enum MgmtReply {
    /// The Current_Settings (u32) that Set Powered, Set Connectable, Set Bondable and Set
    /// Low Energy return.
    public static func currentSettings(_ parameters: [UInt8], of command: MgmtOpcode) throws(MgmtError) -> MgmtSettings {
        var r = ByteReader(parameters, what: "\(command) reply")
        return MgmtSettings(rawValue: try r.u32())
    }

    /// Get Connections: Connection_Count (u16), then Address + Address_Type each.
    public static func connections(_ parameters: [UInt8]) throws(MgmtError) -> [MgmtDeviceAddress] {
        var r = ByteReader(parameters, what: "Get Connections reply")
        let count = Int(try r.u16())
        var devices: [MgmtDeviceAddress] = []
        for _ in 0..<count { devices.append(try MgmtDeviceAddress.read(from: &r)) }
        return devices
    }
}
