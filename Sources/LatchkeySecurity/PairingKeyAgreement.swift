import Crypto
import LatchkeyLockProtocol

/// The key agreement both sides of pairing run (docs/SECURITY.md, "Pairing"):
///
///     transcript = "latchkey pairing v1" ‖ lock identity public ‖ phone ephemeral public
///                  ‖ lock ephemeral public ‖ key id (4, BE) ‖ role ‖ flags ‖ len(name) ‖ name
///     th         = SHA-256(transcript)
///     ikm        = X25519(lock ephemeral, phone ephemeral) ‖ X25519(lock identity, phone ephemeral)
///     key        = HKDF-SHA256(ikm, salt: th, info: "latchkey command key v1", 32)
///     confirm    = HKDF-SHA256(ikm, salt: th, info: "latchkey pairing confirm v1", 32)
///     lock MAC   = HMAC-SHA256(confirm, "lock" ‖ th)[0..<16]
///     code       = BE32(HMAC-SHA256(confirm, "code" ‖ th)[0..<4]) mod 10⁶, six digits
///
/// The transcript binds both public keys, the lock's long-term identity and what the lock
/// granted (id, role, flags), so a change to any of them changes the key and the MAC. The
/// second X25519 term means only the holder of the identity's private key derives the key.
public enum PairingKeyAgreement {
    static let label = Array("latchkey pairing v1".utf8)

    /// What the agreement yields: the per-phone key and the two confirmation values.
    public struct Derived: Equatable, Sendable {
        public var secret: [UInt8]
        public var lockConfirmation: [UInt8]
        /// Six digits both sides can show, for an owner who wants to compare them.
        public var comparisonCode: String
    }

    public struct Grant: Equatable, Sendable {
        public var keyID: UInt32
        public var role: KeyRole
        public var mayRequestArrivalUnlock: Bool
        public init(keyID: UInt32, role: KeyRole, mayRequestArrivalUnlock: Bool) {
            self.keyID = keyID; self.role = role; self.mayRequestArrivalUnlock = mayRequestArrivalUnlock
        }
        public var roleByte: UInt8 { role == .admin ? 1 : 0 }
        public var flags: UInt8 { mayRequestArrivalUnlock ? PairingResponse.arrivalFlag : 0 }
    }

    public static func transcript(lockIdentity: [UInt8], phonePublic: [UInt8], lockPublic: [UInt8], grant: Grant,
                                  name: String) -> [UInt8] {
        var t = label + lockIdentity + phonePublic + lockPublic
        for s in stride(from: 24, through: 0, by: -8) { t.append(UInt8(truncatingIfNeeded: grant.keyID >> s)) }
        t += [grant.roleByte, grant.flags, UInt8(name.utf8.count)] + Array(name.utf8)
        return t
    }

    /// A public key of small order (all-zero, or one of the few points RFC 7748 §6.1 warns
    /// about) makes X25519 return all zeros: a "shared" secret the sender knows without any
    /// private key. swift-crypto does not refuse it, so we do (RFC 7748 §6.1's check).
    public struct NonContributory: Error {}

    /// Derives from the two shared secrets (ephemeral–ephemeral, then identity–ephemeral).
    public static func derive(ephemeralShared: SharedSecret, identityShared: SharedSecret,
                              transcript: [UInt8]) throws(NonContributory) -> Derived {
        let th = Array(SHA256.hash(data: transcript))
        let first = ephemeralShared.withUnsafeBytes { Array($0) }
        let second = identityShared.withUnsafeBytes { Array($0) }
        guard first.contains(where: { $0 != 0 }), second.contains(where: { $0 != 0 }) else { throw NonContributory() }
        let ikm = first + second
        let input = SymmetricKey(data: ikm)
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: input, salt: th,
                                         info: Array("latchkey command key v1".utf8), outputByteCount: 32)
        let confirm = HKDF<SHA256>.deriveKey(inputKeyMaterial: input, salt: th,
                                             info: Array("latchkey pairing confirm v1".utf8), outputByteCount: 32)
        let mac = Array(HMAC<SHA256>.authenticationCode(for: Array("lock".utf8) + th, using: confirm))
        let codeMAC = Array(HMAC<SHA256>.authenticationCode(for: Array("code".utf8) + th, using: confirm))
        let code = (UInt32(codeMAC[0]) << 24 | UInt32(codeMAC[1]) << 16 | UInt32(codeMAC[2]) << 8 | UInt32(codeMAC[3]))
            % 1_000_000
        let digits = String(code)
        return Derived(secret: key.withUnsafeBytes { Array($0) },
                       lockConfirmation: Array(mac.prefix(PairingResponse.confirmationLength)),
                       comparisonCode: String(repeating: "0", count: 6 - digits.count) + digits)
    }

    /// A short, readable fingerprint of a lock identity key: what `latchkey pair` prints and
    /// `latchkey phone pair --lock-fingerprint` checks. 8 octets of SHA-256, in four groups.
    public static func fingerprint(of identityPublic: [UInt8]) -> String {
        let h = Array(SHA256.hash(data: identityPublic)).prefix(8)
        let hex = h.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
        return stride(from: 0, to: 8, by: 2).map { hex[$0] + hex[$0 + 1] }.joined(separator: "-")
    }
}

/// The lock's long-term X25519 identity. Created once and kept in the lock's state
/// directory; its public half is in every pairing transcript.
public struct LockIdentity: Sendable {
    public let privateKey: Curve25519.KeyAgreement.PrivateKey

    public init(rawPrivateKey: [UInt8]) throws {
        privateKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: rawPrivateKey)
    }

    /// 32 random octets for a new identity (what the store keeps).
    public static func newRawPrivateKey() -> [UInt8] {
        Array(Curve25519.KeyAgreement.PrivateKey().rawRepresentation)
    }

    public var publicKey: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }
    public var fingerprint: String { PairingKeyAgreement.fingerprint(of: publicKey) }
}
