/// A controller index on the mgmt socket: `hciN` is index N; `none` (0xFFFF) addresses
/// the management interface itself (BlueZ doc/mgmt-api.txt, "Packet Structures").
public struct MgmtIndex: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// `<non-controller>`: commands and events that concern no controller.
    public static let none = MgmtIndex(0xFFFF)

    /// "hci0" → 0, "0" → 0; nil for anything else.
    public init?(adapterName: String) {
        let digits = adapterName.hasPrefix("hci") ? adapterName.dropFirst(3) : Substring(adapterName)
        guard !digits.isEmpty, let n = UInt16(digits), n != 0xFFFF else { return nil }
        self.init(n)
    }

    public var description: String { self == .none ? "non-controller" : "hci\(rawValue)" }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// One mgmt message, command or event: code (u16), controller index (u16), parameter
/// length (u16), parameters; all little-endian.
public struct MgmtPacket: Hashable, Sendable {
    public static let headerLength = 6

    /// The command opcode (commands) or the event code (events).
    public var code: UInt16
    public var index: MgmtIndex
    public var parameters: [UInt8]

    public init(code: UInt16, index: MgmtIndex, parameters: [UInt8] = []) {
        self.code = code
        self.index = index
        self.parameters = parameters
    }

    public func encoded() -> [UInt8] {
        var writer = ByteWriter()
        writer.u16(code)
        writer.u16(index.rawValue)
        writer.u16(UInt16(parameters.count))
        writer.bytes(parameters)
        return writer.bytes
    }

    /// Parses one whole message (one read from the socket: the kernel never splits or joins them).
    public init(decoding bytes: [UInt8]) throws(MgmtError) {
        var reader = ByteReader(bytes, what: "mgmt header")
        let code = try reader.u16()
        let index = MgmtIndex(try reader.u16())
        let length = Int(try reader.u16())
        guard reader.remaining == length else {
            throw MgmtError(.malformed, detail: "header says \(length) parameter bytes, \(reader.remaining) follow")
        }
        self.init(code: code, index: index, parameters: try reader.bytes(length))
    }
}

/// Little-endian field writer.
struct ByteWriter {
    var bytes: [UInt8] = []
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
    mutating func u32(_ v: UInt32) { for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: v >> shift)) } }
    mutating func bytes(_ v: [UInt8]) { bytes += v }
}

/// Little-endian field reader; running past the end is a `.malformed` error naming `what`.
struct ByteReader {
    private let data: [UInt8]
    private var offset = 0
    let what: String

    init(_ data: [UInt8], what: String) {
        self.data = data
        self.what = what
    }

    var remaining: Int { data.count - offset }

    mutating func bytes(_ count: Int) throws(MgmtError) -> [UInt8] {
        guard count >= 0, count <= remaining else {
            throw MgmtError(.malformed, detail: "\(what): needs \(count) more bytes at offset \(offset), has \(remaining)")
        }
        defer { offset += count }
        return Array(data[offset..<offset + count])
    }

    mutating func u8() throws(MgmtError) -> UInt8 { try bytes(1)[0] }

    mutating func u16() throws(MgmtError) -> UInt16 {
        let b = try bytes(2)
        return UInt16(b[0]) | UInt16(b[1]) << 8
    }

    mutating func u32() throws(MgmtError) -> UInt32 {
        try bytes(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func rest() -> [UInt8] {
        defer { offset = data.count }
        return Array(data[offset...])
    }
}
