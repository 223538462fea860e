/// A 48-bit Bluetooth device address with its LE address type.
public struct BluetoothAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    public enum Kind: UInt8, Sendable { case `public` = 0, random = 1 }

    /// The 48 address bits, most significant byte first as printed ("AA:..." is bits 47–40).
    public var value: UInt64
    public var kind: Kind

    public init(_ value: UInt64, kind: Kind = .public) {
        self.value = value & 0xFFFF_FFFF_FFFF
        self.kind = kind
    }

    /// Parses "AA:BB:CC:DD:EE:FF" (case-insensitive).
    public init?(string: String, kind: Kind = .public) {
        let parts = string.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var v: UInt64 = 0
        for p in parts {
            guard p.count == 2, let b = UInt8(p, radix: 16) else { return nil }
            v = v << 8 | UInt64(b)
        }
        self.init(v, kind: kind)
    }

    /// Little-endian bytes as HCI and mgmt carry them (bdaddr_t order).
    public var littleEndianBytes: [UInt8] { (0..<6).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    public var description: String {
        (0..<6).reversed().map { i -> String in
            let b = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))
            let h = String(b, radix: 16, uppercase: true)
            return b < 16 ? "0" + h : h
        }.joined(separator: ":")
    }

    public static func < (a: Self, b: Self) -> Bool { (a.value, a.kind.rawValue) < (b.value, b.kind.rawValue) }
}
