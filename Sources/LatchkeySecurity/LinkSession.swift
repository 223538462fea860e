import Crypto
import LatchkeyLockProtocol

/// A link's session (docs/SECURITY.md, "Sessions"): what a phone that proved its key on this
/// link may read, sealed to it. A sealed command whose tag verified opens it (bound to a fresh
/// challenge of this link, it proves the key now, here); both sides derive the session key by
/// HKDF-SHA256 from the phone's key, the challenge and the frame's nonce (docs/PROTOCOL.md,
/// "Sessions and sealed replies"). Each command opens a new session with its sequence at 1, so
/// a restarted lock or phone meets the other again at the next command.
public struct LinkSession: Sendable {
    public let keyID: UInt32
    private let key: SymmetricKey
    /// The frame's counter and its challenge ‖ nonce: with the key's secret they derive the
    /// session key again (`LinkSession+Kept.swift`).
    let counter: UInt64
    let salt: [UInt8]
    /// The last sequence sealed (lock side) or accepted (phone side).
    public internal(set) var sequence: UInt32 = 0

    static let info = Array("latchkey session v1".utf8)

    /// Both sides: the session a frame opens once the lock accepts its tag.
    public init(opening frame: CommandFrame, secret: [UInt8]) {
        self.init(keyID: frame.keyID, counter: frame.counter, salt: frame.challenge + frame.nonce, secret: secret)
    }

    init(keyID: UInt32, counter: UInt64, salt: [UInt8], secret: [UInt8]) {
        self.keyID = keyID
        self.counter = counter
        self.salt = salt
        var info = Self.info
        info.appendBE32(keyID)
        info.appendBE64(counter)
        key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: secret), salt: salt,
                                     info: info, outputByteCount: 32)
    }

    /// The lock: seals `payload` as the session's next reply.
    public mutating func seal(_ payload: [UInt8], as kind: SealedReply.Kind) -> SealedReply {
        precondition(payload.count <= SealedReply.maximumPayloadLength)
        precondition(sequence < .max, "a session ends long before 2³² replies")
        sequence += 1
        let box: ChaChaPoly.SealedBox
        do {
            box = try ChaChaPoly.seal(payload, using: key, nonce: try ChaChaPoly.Nonce(data: SealedReply.nonce(sequence: sequence)),
                                      authenticating: SealedReply.associatedData(kind: kind, sequence: sequence))
        } catch {
            // Only a nonce of the wrong size throws: ours is always 12 octets.
            preconditionFailure("ChaChaPoly refused a 12-octet nonce: \(error)")
        }
        return SealedReply(kind: kind, sequence: sequence, sealed: Array(box.ciphertext) + Array(box.tag))
    }

    /// Why a reply could not be opened.
    public enum OpenError: Error, Equatable, Sendable {
        case malformed(LockProtocolError)
        case wrongKind(SealedReply.Kind)
        /// The tag did not verify under this session's key.
        case authenticationFailed
        /// A sequence at or below one already accepted: a replay.
        case replayed(UInt32)
    }

    /// The phone: opens `bytes` as a reply of `kind`; accepts each sequence once, in order.
    public mutating func open(_ bytes: [UInt8], as kind: SealedReply.Kind) throws(OpenError) -> [UInt8] {
        let reply: SealedReply
        do { reply = try SealedReply(decoding: bytes) } catch { throw .malformed(error) }
        guard reply.kind == kind else { throw .wrongKind(reply.kind) }
        guard reply.sequence > sequence else { throw .replayed(reply.sequence) }
        let n = reply.sealed.count - SealedReply.tagLength
        let plain: [UInt8]
        do {
            let box = try ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: SealedReply.nonce(sequence: reply.sequence)),
                                               ciphertext: reply.sealed[..<n], tag: reply.sealed[n...])
            plain = Array(try ChaChaPoly.open(box, using: key,
                                              authenticating: SealedReply.associatedData(kind: kind,
                                                                                         sequence: reply.sequence)))
        } catch {
            throw .authenticationFailed
        }
        sequence = reply.sequence
        return plain
    }
}

extension Array<UInt8> {
    mutating func appendBE32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: v >> s)) } }
    mutating func appendBE64(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: v >> s)) } }
}
