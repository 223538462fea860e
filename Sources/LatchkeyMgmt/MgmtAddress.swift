import LatchkeyTransport

/// Address_Type in mgmt commands and events: 0 BR/EDR, 1 LE Public, 2 LE Random.
public struct MgmtAddressType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let bredr = Self(rawValue: 0)
    public static let lePublic = Self(rawValue: 1)
    public static let leRandom = Self(rawValue: 2)

    public init(_ kind: BluetoothAddress.Kind) { self = kind == .random ? .leRandom : .lePublic }

    public var isLowEnergy: Bool { self == .lePublic || self == .leRandom }
}

/// Address (6 octets, little-endian) + Address_Type, as most device commands and events carry it.
public struct MgmtDeviceAddress: Hashable, Sendable, CustomStringConvertible {
    public var value: UInt64
    public var type: MgmtAddressType

    public init(_ address: BluetoothAddress) {
        value = address.value
        type = MgmtAddressType(address.kind)
    }

    init(value: UInt64, type: MgmtAddressType) {
        self.value = value
        self.type = type
    }

    /// The LE address; nil for a BR/EDR device (the seam is LE only).
    public var address: BluetoothAddress? {
        guard type.isLowEnergy else { return nil }
        return BluetoothAddress(value, kind: type == .leRandom ? .random : .public)
    }

    public var description: String {
        address.map { "\($0)" } ?? "\(BluetoothAddress(value)) (BR/EDR)"
    }

    func write(to writer: inout ByteWriter) {
        writer.bytes(BluetoothAddress(value).littleEndianBytes)
        writer.u8(type.rawValue)
    }

    static func read(from reader: inout ByteReader) throws(MgmtError) -> MgmtDeviceAddress {
        let value = try readAddress(from: &reader)
        return MgmtDeviceAddress(value: value, type: MgmtAddressType(rawValue: try reader.u8()))
    }

    /// Six octets, least significant first (bdaddr_t order).
    static func readAddress(from reader: inout ByteReader) throws(MgmtError) -> UInt64 {
        try reader.bytes(6).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }
}
