import LatchkeyATT
import LatchkeyTransport

/// Little-endian primitives of the air protocol. Lists and byte strings carry a u16
/// count; optionals a presence byte (0 or 1).
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { integer(v) }
    mutating func u32(_ v: UInt32) { integer(v) }
    mutating func u64(_ v: UInt64) { integer(v) }
    mutating func i64(_ v: Int64) { integer(v) }
    mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }
    mutating func double(_ v: Double) { u64(v.bitPattern) }
    mutating func duration(_ v: Duration) { i64(v.nanoseconds) }

    mutating func data(_ v: [UInt8]) {
        precondition(v.count <= Int(UInt16.max), "a wire byte string holds at most 65535 bytes")
        u16(UInt16(v.count))
        bytes += v
    }

    mutating func string(_ v: String) { data(Array(v.utf8)) }

    mutating func list<T>(_ items: [T], _ write: (inout WireWriter, T) -> Void) {
        precondition(items.count <= Int(UInt16.max), "a wire list holds at most 65535 items")
        u16(UInt16(items.count))
        for item in items { write(&self, item) }
    }

    mutating func optional<T>(_ item: T?, _ write: (inout WireWriter, T) -> Void) {
        bool(item != nil)
        if let item { write(&self, item) }
    }

    private mutating func integer<T: FixedWidthInteger>(_ v: T) {
        for i in 0..<(T.bitWidth / 8) { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
    }
}

/// Reads what `WireWriter` writes; every shortfall or bad value is an `AirProtocolError`.
struct WireReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func u8() throws(AirProtocolError) -> UInt8 { try integer() }
    mutating func u16() throws(AirProtocolError) -> UInt16 { try integer() }
    mutating func u32() throws(AirProtocolError) -> UInt32 { try integer() }
    mutating func u64() throws(AirProtocolError) -> UInt64 { try integer() }
    mutating func i64() throws(AirProtocolError) -> Int64 { try integer() }

    mutating func bool() throws(AirProtocolError) -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        case let other: throw AirProtocolError(.invalidValue, "boolean byte \(other) at offset \(offset - 1)")
        }
    }

    /// A finite double (positions and ranges; NaN and infinities are refused).
    mutating func double() throws(AirProtocolError) -> Double {
        let v = Double(bitPattern: try u64())
        guard v.isFinite else { throw AirProtocolError(.invalidValue, "non-finite number at offset \(offset - 8)") }
        return v
    }

    mutating func duration() throws(AirProtocolError) -> Duration { .nanoseconds(try i64()) }

    mutating func data() throws(AirProtocolError) -> [UInt8] {
        let count = Int(try u16())
        guard bytes.count - offset >= count else {
            throw AirProtocolError(.truncated, "byte string of \(count) at offset \(offset), \(bytes.count - offset) left")
        }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func string() throws(AirProtocolError) -> String {
        let raw = try data()
        guard let s = String(validating: raw, as: UTF8.self) else {
            throw AirProtocolError(.invalidValue, "invalid UTF-8 in a string")
        }
        return s
    }

    mutating func list<T>(_ read: (inout WireReader) throws(AirProtocolError) -> T) throws(AirProtocolError) -> [T] {
        let count = Int(try u16())
        var items: [T] = []
        for _ in 0..<count { items.append(try read(&self)) }
        return items
    }

    mutating func optional<T>(_ read: (inout WireReader) throws(AirProtocolError) -> T) throws(AirProtocolError) -> T? {
        try bool() ? try read(&self) : nil
    }

    func finish() throws(AirProtocolError) {
        guard isAtEnd else { throw AirProtocolError(.trailingBytes, "\(bytes.count - offset) bytes after the message") }
    }

    private mutating func integer<T: FixedWidthInteger>() throws(AirProtocolError) -> T {
        let size = T.bitWidth / 8
        guard bytes.count - offset >= size else {
            throw AirProtocolError(.truncated, "\(size)-byte integer at offset \(offset), \(bytes.count - offset) left")
        }
        var v: T = 0
        for i in 0..<size { v |= T(truncatingIfNeeded: bytes[offset + i]) << (8 * i) }
        offset += size
        return v
    }
}
