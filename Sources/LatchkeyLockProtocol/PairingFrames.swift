/// The two frames of pairing (docs/SECURITY.md, "Pairing"). Both travel on the pairing
/// characteristic: the phone writes a request, the lock answers the read that follows on
/// the same link. Parsing checks the exact length first, then every field; no field is
/// optional and no trailing octet is ignored.

/// The phone's half of the key agreement, written to the pairing characteristic.
///
///     0       version (0x02)
///     1       frame kind (0x10 = pairing request)
///     2..33   the phone's ephemeral X25519 public key
///     34..49  the phone's nonce (16 random octets)
///     50      name length n (0...32)
///     51..    the name the phone proposes (UTF-8, n octets, printable: `PairingName`)
public struct PairingRequest: Equatable, Sendable {
    /// 2: nonces, the 128-bit fingerprint and the owner's confirmation; a version-1
    /// request is refused as malformed.
    public static let version: UInt8 = 2
    public static let kind: UInt8 = 0x10
    public static let publicKeyLength = 32
    public static let nonceLength = 16
    public static let maximumNameLength = PairingName.maximumLength
    static let nameLengthOffset = 2 + publicKeyLength + nonceLength
    static let fixedLength = nameLengthOffset + 1

    public var phonePublicKey: [UInt8]
    public var nonce: [UInt8]
    public var name: String

    public init(phonePublicKey: [UInt8], nonce: [UInt8], name: String) {
        precondition(phonePublicKey.count == Self.publicKeyLength && nonce.count == Self.nonceLength)
        self.phonePublicKey = phonePublicKey
        self.nonce = nonce
        // Cut at a character boundary so the name always fits (the lock still refuses a
        // non-printable one: the phone's caller validates it first).
        var cut = ""
        for c in name where cut.utf8.count + String(c).utf8.count <= Self.maximumNameLength { cut.append(c) }
        self.name = cut
    }

    public var bytes: [UInt8] {
        [Self.version, Self.kind] + phonePublicKey + nonce + [UInt8(name.utf8.count)] + Array(name.utf8)
    }

    public init(decoding bytes: [UInt8]) throws(LockProtocolError) {
        guard bytes.count >= Self.fixedLength, bytes.count <= Self.fixedLength + Self.maximumNameLength else {
            throw .malformed("pairing request length \(bytes.count)")
        }
        guard bytes[0] == Self.version else { throw .malformed("pairing request version \(bytes[0])") }
        guard bytes[1] == Self.kind else { throw .malformed("pairing request kind \(bytes[1])") }
        let n = Int(bytes[Self.nameLengthOffset])
        guard bytes.count == Self.fixedLength + n else { throw .malformed("pairing request name length \(n)") }
        guard let name = String(validating: bytes[Self.fixedLength...], as: UTF8.self) else {
            throw .malformed("pairing request name is not UTF-8")
        }
        if let problem = PairingName.problem(name) { throw .malformed("pairing request name \(problem)") }
        phonePublicKey = Array(bytes[2..<34])
        nonce = Array(bytes[34..<Self.nameLengthOffset])
        self.name = name
    }
}

/// The lock's half, read from the pairing characteristic after an accepted request: version
/// 0x02, kind 0x11, the lock's identity and ephemeral X25519 public keys (32 each), its nonce
/// (16), the new key's id (4, big-endian), role (0 user, 1 admin), flags (bit 0: may request
/// arrival unlock) and the lock's key confirmation (16). docs/PROTOCOL.md, "Pairing".
public struct PairingResponse: Equatable, Sendable {
    public static let version: UInt8 = PairingRequest.version
    public static let kind: UInt8 = 0x11
    public static let length = 104
    public static let confirmationLength = 16
    public static let arrivalFlag: UInt8 = 1 << 0

    public var lockIdentityKey: [UInt8]
    public var lockPublicKey: [UInt8]
    public var nonce: [UInt8]
    public var keyID: UInt32
    /// 0 user, 1 admin (the lock chose it when its owner opened the window).
    public var role: UInt8
    public var flags: UInt8
    public var confirmation: [UInt8]

    public init(lockIdentityKey: [UInt8], lockPublicKey: [UInt8], nonce: [UInt8], keyID: UInt32, role: UInt8,
                flags: UInt8, confirmation: [UInt8]) {
        precondition(lockIdentityKey.count == 32 && lockPublicKey.count == 32 && nonce.count == PairingRequest.nonceLength
                     && confirmation.count == Self.confirmationLength)
        self.lockIdentityKey = lockIdentityKey; self.lockPublicKey = lockPublicKey; self.nonce = nonce; self.keyID = keyID
        self.role = role; self.flags = flags; self.confirmation = confirmation
    }

    public var bytes: [UInt8] {
        var out: [UInt8] = [Self.version, Self.kind] + lockIdentityKey + lockPublicKey + nonce
        out.appendBE(keyID)
        out += [role, flags] + confirmation
        return out
    }

    public init(decoding bytes: [UInt8]) throws(LockProtocolError) {
        guard bytes.count == Self.length else { throw .malformed("pairing response length \(bytes.count)") }
        guard bytes[0] == Self.version, bytes[1] == Self.kind else { throw .malformed("pairing response header") }
        guard bytes[86] <= 1 else { throw .malformed("pairing response role \(bytes[86])") }
        guard bytes[87] & ~Self.arrivalFlag == 0 else { throw .malformed("pairing response flags \(bytes[87])") }
        lockIdentityKey = Array(bytes[2..<34])
        lockPublicKey = Array(bytes[34..<66])
        nonce = Array(bytes[66..<82])
        keyID = bytes.readBE32(at: 82)
        role = bytes[86]
        flags = bytes[87]
        confirmation = Array(bytes[88..<104])
    }
}
