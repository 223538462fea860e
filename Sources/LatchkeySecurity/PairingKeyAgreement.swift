import Crypto
import LatchkeyLockProtocol

/// The key agreement both sides of pairing run: a transcript of both public keys, both nonces,
/// the lock's identity, what the lock granted (id, role, flags) and the name, hashed (`th`);
/// `ikm` = X25519(lock ephemeral, phone ephemeral) ‖ X25519(lock identity, phone ephemeral);
/// the key and a confirmation key by HKDF-SHA256 from `ikm` salted with `th`; the lock's MAC
/// and the six-digit code by HMAC-SHA256 under the confirmation key. Any change to the
/// transcript changes key, MAC and code, and only the identity's holder derives the key.
/// Every formula and label: docs/PROTOCOL.md, "Pairing"; why: docs/SECURITY.md, "Pairing".
public enum PairingKeyAgreement {
    static let label = Array("latchkey pairing v2".utf8)

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

    /// The public values of one exchange, in transcript order.
    public struct Publics: Equatable, Sendable {
        public var lockIdentity: [UInt8]
        public var phonePublic: [UInt8]
        public var phoneNonce: [UInt8]
        public var lockPublic: [UInt8]
        public var lockNonce: [UInt8]
        public init(lockIdentity: [UInt8], phonePublic: [UInt8], phoneNonce: [UInt8], lockPublic: [UInt8],
                    lockNonce: [UInt8]) {
            self.lockIdentity = lockIdentity; self.phonePublic = phonePublic; self.phoneNonce = phoneNonce
            self.lockPublic = lockPublic; self.lockNonce = lockNonce
        }
    }

    public static func transcript(_ p: Publics, grant: Grant, name: String) -> [UInt8] {
        var t = label + p.lockIdentity + p.phonePublic + p.phoneNonce + p.lockPublic + p.lockNonce
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

    /// Octets of SHA-256 in a fingerprint: 16 (128 bits), so that finding another X25519 key
    /// with the same fingerprint costs 2¹²⁸ tries (2⁶⁴ for a pair of keys sharing one, which
    /// gains an attacker nothing here: the lock's key is not the attacker's choice).
    public static let fingerprintLength = 16

    /// A readable fingerprint of a lock identity key: what `latchkey pair` prints and
    /// `latchkey phone pair --lock-fingerprint` pins. 16 octets of SHA-256, in eight groups
    /// of four hex digits.
    public static func fingerprint(of identityPublic: [UInt8]) -> String {
        PairingBeacon.text(ofFingerprint: fingerprintOctets(of: identityPublic))
    }

    /// The 16 octets behind `fingerprint(of:)`, as the lock's pairing beacon carries them.
    public static func fingerprintOctets(of identityPublic: [UInt8]) -> [UInt8] {
        Array(Array(SHA256.hash(data: identityPublic)).prefix(fingerprintLength))
    }

    /// `text` as `fingerprint(of:)` writes it — any case, with or without dashes, colons or
    /// spaces — or nil when it is not 32 hex digits (a 64-bit fingerprint is refused).
    public static func normalizedFingerprint(_ text: String) -> String? {
        let digits = text.lowercased().filter { $0 != "-" && $0 != ":" && $0 != " " }
        guard digits.count == 2 * fingerprintLength, digits.allSatisfy(\.isHexDigit) else { return nil }
        let chars = Array(digits)
        return stride(from: 0, to: chars.count, by: 4).map { String(chars[$0..<$0 + 4]) }.joined(separator: "-")
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
    public static func newRawPrivateKey(from random: RandomSource = .system) -> [UInt8] {
        Array(random.agreementKey().rawRepresentation)
    }

    public var publicKey: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }
    public var fingerprint: String { PairingKeyAgreement.fingerprint(of: publicKey) }
}
