import Crypto
import LatchkeyTransport

/// What is kept of a link beside its socket in the descriptor store, in a sealed memfd of its
/// own, so the process that adopts the link knows what the dead one knew (docs/RESTORATION.md,
/// "Links that outlive the agent"): the link's identity, its connection handle and interval
/// (said once, in the LE Connection Complete the dead process read) and the application's kept
/// state (the lock's session); the adopted socket says the MTU. Layout: "LKL1" ‖ link id (8) ‖
/// peer (6, LE) ‖ address kind ‖ role ‖ handle (2) ‖ interval µs (4) ‖ state length (2) ‖ state
/// ‖ first 8 octets of SHA-256 of all before; big-endian; the checksum finds a foreign file.
struct KeptLinkState: Equatable {
    var id: LinkID
    var peer: BluetoothAddress
    var role: LinkRole
    var connectionHandle: UInt16?
    var connectionInterval: Duration?
    var application: [UInt8] = []

    /// The memfd's size: every record fits.
    static let fileCapacity = 512
    static let magic = Array("LKL1".utf8)
    static let checksumLength = 8
    static let headerLength = 4 + 8 + 6 + 1 + 1 + 2 + 4 + 2
    static let maximumApplicationLength = fileCapacity - headerLength - checksumLength

    /// Why a kept file is not trusted.
    enum Refusal: Error, Equatable, CustomStringConvertible {
        /// All zeros: the process died before it wrote the record (not a fault).
        case neverWritten
        case notARecord
        case damaged
        /// A whole record, of another link than the socket it was kept for.
        case otherLink(LinkID, BluetoothAddress)

        var description: String {
            switch self {
            case .neverWritten: "nothing was written to it"
            case .notARecord: "it holds no link record (another program's file, or another version's)"
            case .damaged: "its record fails its checksum"
            case .otherLink(let id, let peer): "its record is of \(id) to \(peer)"
            }
        }
    }

    func encoded() -> [UInt8] {
        precondition(application.count <= Self.maximumApplicationLength)
        var out = Self.magic
        out.appendBigEndian(id.rawValue, bytes: 8)
        out += peer.littleEndianBytes
        out.append(peer.kind.rawValue)
        out.append(role == .central ? 0 : 1)
        out.appendBigEndian(UInt64(connectionHandle ?? 0xFFFF), bytes: 2)
        let micros = connectionInterval.map { max(1, min(Int64(UInt32.max), $0.microsecondsRounded)) } ?? 0
        out.appendBigEndian(UInt64(micros), bytes: 4)
        out.appendBigEndian(UInt64(application.count), bytes: 2)
        out += application
        out += Self.checksum(out)
        return out
    }

    init(id: LinkID, peer: BluetoothAddress, role: LinkRole, connectionHandle: UInt16? = nil,
         connectionInterval: Duration? = nil, application: [UInt8] = []) {
        self.id = id; self.peer = peer; self.role = role; self.connectionHandle = connectionHandle
        self.connectionInterval = connectionInterval; self.application = application
    }

    /// Reads the file's contents (trailing octets past the record are ignored).
    init(decoding bytes: [UInt8]) throws(Refusal) {
        if bytes.allSatisfy({ $0 == 0 }) { throw .neverWritten }
        guard bytes.count >= Self.headerLength + Self.checksumLength, Array(bytes.prefix(4)) == Self.magic else {
            throw .notARecord
        }
        let length = Int(bytes.bigEndian(at: Self.headerLength - 2, bytes: 2))
        let end = Self.headerLength + length
        guard length <= Self.maximumApplicationLength, bytes.count >= end + Self.checksumLength else { throw .damaged }
        guard Array(bytes[end..<end + Self.checksumLength]) == Self.checksum(Array(bytes[..<end])) else { throw .damaged }
        guard let kind = BluetoothAddress.Kind(rawValue: bytes[18]), bytes[19] <= 1 else { throw .notARecord }
        var address: UInt64 = 0
        for i in (0..<6).reversed() { address = address << 8 | UInt64(bytes[12 + i]) }
        id = LinkID(bytes.bigEndian(at: 4, bytes: 8))
        peer = BluetoothAddress(address, kind: kind)
        role = bytes[19] == 0 ? .central : .peripheral
        let handle = UInt16(bytes.bigEndian(at: 20, bytes: 2))
        connectionHandle = handle == 0xFFFF ? nil : handle
        let micros = bytes.bigEndian(at: 22, bytes: 4)
        connectionInterval = micros == 0 ? nil : .microseconds(Int64(micros))
        application = Array(bytes[Self.headerLength..<end])
    }

    /// The record kept for the link `id` to `peer` in `role`, or why it is not trusted.
    static func read(_ bytes: [UInt8], for id: LinkID, peer: BluetoothAddress, role: LinkRole) throws(Refusal) -> KeptLinkState {
        let state = try KeptLinkState(decoding: bytes)
        guard state.id == id, state.peer == peer, state.role == role else { throw .otherLink(state.id, state.peer) }
        return state
    }

    private static func checksum(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes).prefix(checksumLength)) }
}

extension Duration {
    /// Whole microseconds, rounded to the nearest.
    var microsecondsRounded: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + (attoseconds + 500_000_000_000) / 1_000_000_000_000
    }
}

extension Array<UInt8> {
    fileprivate mutating func appendBigEndian(_ v: UInt64, bytes: Int) {
        for i in (0..<bytes).reversed() { append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    fileprivate func bigEndian(at offset: Int, bytes: Int) -> UInt64 {
        self[offset..<offset + bytes].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
