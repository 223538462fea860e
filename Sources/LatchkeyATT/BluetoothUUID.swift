/// A Bluetooth UUID as it travels in ATT: 16-bit SIG-assigned or full 128-bit.
///
/// Equality follows the spec: a 16-bit UUID equals its 128-bit form built on the
/// Bluetooth Base UUID (0000xxxx-0000-1000-8000-00805F9B34FB), so every value is
/// normalised to the short form when it can be.
public enum BluetoothUUID: Hashable, Sendable {
    case bit16(UInt16)
    /// Big-endian (display order) bytes of a 128-bit UUID.
    case bit128(UInt128)

    /// The Bluetooth Base UUID, 0000xxxx-0000-1000-8000-00805F9B34FB, with xxxx = 0.
    static let base: UInt128 = 0x0000_0000_0000_1000_8000_0080_5F9B_34FB

    public init(_ short: UInt16) { self = .bit16(short) }

    /// Builds a UUID from its 128-bit value, folding Base-UUID values to 16 bits.
    public init(value: UInt128) {
        let mask: UInt128 = ~(UInt128(0xFFFF_FFFF) << 96)
        if value & mask == Self.base && (value >> 96) <= 0xFFFF {
            self = .bit16(UInt16(truncatingIfNeeded: value >> 96))
        } else {
            self = .bit128(value)
        }
    }

    /// Parses "180F", "0000180f-0000-1000-8000-00805f9b34fb" or the same without dashes.
    public init?(string: String) {
        let hex = string.filter { $0 != "-" }
        if hex.count == 4, let v = UInt16(hex, radix: 16) { self = .bit16(v); return }
        guard hex.count == 32, let v = UInt128(hex, radix: 16) else { return nil }
        self.init(value: v)
    }

    /// The full 128-bit value.
    public var value128: UInt128 {
        switch self {
        case .bit16(let s): return Self.base | (UInt128(s) << 96)
        case .bit128(let v): return v
        }
    }

    /// Number of bytes this UUID takes on the wire (2 or 16).
    public var wireLength: Int {
        if case .bit16 = self { return 2 }
        return 16
    }

    /// Appends the little-endian wire form (2 or 16 bytes).
    public func append(to bytes: inout [UInt8]) {
        switch self {
        case .bit16(let s):
            bytes.append(UInt8(truncatingIfNeeded: s))
            bytes.append(UInt8(truncatingIfNeeded: s >> 8))
        case .bit128(let v):
            for i in 0..<16 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt128(i)))) }
        }
    }

    /// Decodes a little-endian UUID of exactly 2 or 16 bytes; nil for any other length.
    public init?<C: Collection<UInt8>>(littleEndian bytes: C) {
        switch bytes.count {
        case 2:
            var it = bytes.makeIterator()
            let lo = UInt16(it.next()!), hi = UInt16(it.next()!)
            self = .bit16(lo | hi << 8)
        case 16:
            var v: UInt128 = 0
            var shift: UInt128 = 0
            for b in bytes { v |= UInt128(b) << shift; shift += 8 }
            self.init(value: v)
        default:
            return nil
        }
    }

    /// The wire bytes, little-endian.
    public var littleEndianBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(wireLength)
        append(to: &out)
        return out
    }
}

extension BluetoothUUID: CustomStringConvertible {
    public var description: String {
        switch self {
        case .bit16(let s):
            let h = String(s, radix: 16, uppercase: true)
            return String(repeating: "0", count: 4 - h.count) + h
        case .bit128(let v):
            var h = String(v, radix: 16, uppercase: true)
            h = String(repeating: "0", count: 32 - h.count) + h
            let c = Array(h)
            return [c[0..<8], c[8..<12], c[12..<16], c[16..<20], c[20..<32]].map { String($0) }.joined(separator: "-")
        }
    }
}

extension BluetoothUUID {
    // GATT declaration and descriptor types (Bluetooth Assigned Numbers, section 3.5 / 3.7).
    public static let primaryService = BluetoothUUID(0x2800)
    public static let secondaryService = BluetoothUUID(0x2801)
    public static let include = BluetoothUUID(0x2802)
    public static let characteristic = BluetoothUUID(0x2803)
    public static let characteristicExtendedProperties = BluetoothUUID(0x2900)
    public static let characteristicUserDescription = BluetoothUUID(0x2901)
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
    public static let serverCharacteristicConfiguration = BluetoothUUID(0x2903)
}
