/// What the lock sends a phone over a link's session (docs/SECURITY.md, "Sessions"): the lock
/// state and event-log transfers, sealed so a passive sniffer learns neither the bolt, the door
/// nor who came when. Version 1, big-endian: version, kind (0x20 status, 0x21 log transfer),
/// the session's sequence number (4, from 1), then ChaChaPoly ciphertext and tag; the nonce is
/// 8 zero octets then the sequence, and octets 0..5 are the associated data. Parsing checks the
/// header only; the tag and the sequence are `LinkSession`'s. docs/PROTOCOL.md, "Sessions and
/// sealed replies".
public struct SealedReply: Equatable, Sendable {
    public static let version: UInt8 = 1
    public static let headerLength = 6
    public static let tagLength = 16
    /// The largest payload: 64 KiB, a log transfer of some 250 of the longest events (the
    /// lock sends fewer events rather than more octets; the phone asks again from the next).
    public static let maximumPayloadLength = 65_536

    public enum Kind: UInt8, Sendable, CaseIterable {
        case status = 0x20
        case logTransfer = 0x21
    }

    public var kind: Kind
    public var sequence: UInt32
    /// Ciphertext followed by the tag.
    public var sealed: [UInt8]

    public init(kind: Kind, sequence: UInt32, sealed: [UInt8]) {
        self.kind = kind; self.sequence = sequence; self.sealed = sealed
    }

    public static func associatedData(kind: Kind, sequence: UInt32) -> [UInt8] {
        var out: [UInt8] = [version, kind.rawValue]
        out.appendBE(sequence)
        return out
    }

    /// The 12-octet AEAD nonce for `sequence`.
    public static func nonce(sequence: UInt32) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 8)
        out.appendBE(sequence)
        return out
    }

    public var bytes: [UInt8] { Self.associatedData(kind: kind, sequence: sequence) + sealed }

    public init(decoding bytes: [UInt8]) throws(LockProtocolError) {
        guard bytes.count >= Self.headerLength + Self.tagLength,
              bytes.count <= Self.headerLength + Self.maximumPayloadLength + Self.tagLength else {
            throw .malformed("sealed reply length \(bytes.count)")
        }
        guard bytes[0] == Self.version else { throw .malformed("sealed reply version \(bytes[0])") }
        guard let kind = Kind(rawValue: bytes[1]) else { throw .malformed("sealed reply kind \(bytes[1])") }
        let sequence = bytes.readBE32(at: 2)
        guard sequence > 0 else { throw .malformed("sealed reply sequence 0") }
        self.kind = kind
        self.sequence = sequence
        sealed = Array(bytes[Self.headerLength...])
    }
}
