import Crypto
import LatchkeyLockProtocol

/// What a phone keeps after pairing: its key, what the lock granted, and the lock's
/// identity (pinned: a later pairing with another identity is a different lock).
public struct PairedKey: Equatable, Sendable {
    public var keyID: UInt32
    public var secret: [UInt8]
    public var role: KeyRole
    public var mayRequestArrivalUnlock: Bool
    public var lockIdentity: [UInt8]
    public var comparisonCode: String

    public init(keyID: UInt32, secret: [UInt8], role: KeyRole, mayRequestArrivalUnlock: Bool, lockIdentity: [UInt8],
                comparisonCode: String) {
        self.keyID = keyID; self.secret = secret; self.role = role
        self.mayRequestArrivalUnlock = mayRequestArrivalUnlock; self.lockIdentity = lockIdentity
        self.comparisonCode = comparisonCode
    }

    public var lockFingerprint: String { PairingKeyAgreement.fingerprint(of: lockIdentity) }
}

/// Why a phone's pairing did not produce a key.
public enum PairingFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The lock's answer was not a well-formed response.
    case malformedResponse(String)
    /// The lock's confirmation did not verify: not the lock that holds this identity, or
    /// someone changed a frame in flight.
    case confirmationFailed
    /// The lock's identity is not the one the owner said to expect.
    case unexpectedLock(fingerprint: String)
    case refused(CommandRejection)
    case notDelivered(String)
    /// The fingerprint or name the phone was given is unusable; nothing was sent.
    case setup(PairingSetupError)

    public var description: String {
        switch self {
        case .malformedResponse(let why): "malformed pairing response: \(why)"
        case .confirmationFailed: "the lock's key confirmation did not verify"
        case .unexpectedLock(let f): "the lock's identity \(f) is not the expected one"
        case .refused(let r): "the lock refused: \(r)"
        case .notDelivered(let why): "not delivered: \(why)"
        case .setup(let why): "\(why)"
        }
    }
}

/// Why a phone cannot start pairing with what it was given.
public enum PairingSetupError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The lock fingerprint is not 128 bits as `latchkey pair` prints it.
    case badFingerprint(String)
    /// The proposed name is too long or not printable (`PairingName`).
    case badName(String)

    public var description: String {
        switch self {
        case .badFingerprint(let f):
            "lock fingerprint \"\(PairingName.escaped(f))\" is not the 32 hex digits `latchkey pair` prints"
        case .badName(let why): "the name is refused: \(why)"
        }
    }
}

/// The phone's side of the key agreement: one ephemeral key pair and nonce per attempt.
/// The lock's fingerprint is mandatory: the phone pins the lock it pairs with, so nobody in
/// the middle can play the lock (docs/SECURITY.md, "Why this design").
public struct PairingInitiator {
    private let ephemeral: Curve25519.KeyAgreement.PrivateKey
    private let nonce: [UInt8]
    public let name: String
    /// Only a lock whose identity has this fingerprint (normalized) is accepted.
    public let expectedFingerprint: String

    /// `random`: where the ephemeral key and the nonce are drawn from.
    public init(name: String, expectedFingerprint: String, random: RandomSource = .system) throws(PairingSetupError) {
        guard let fingerprint = PairingKeyAgreement.normalizedFingerprint(expectedFingerprint) else {
            throw .badFingerprint(expectedFingerprint)
        }
        if let problem = PairingName.problem(name) { throw .badName(problem) }
        self.name = name
        self.expectedFingerprint = fingerprint
        ephemeral = random.agreementKey()
        nonce = random.bytes(PairingRequest.nonceLength)
    }

    public var request: PairingRequest {
        PairingRequest(phonePublicKey: Array(ephemeral.publicKey.rawRepresentation), nonce: nonce, name: name)
    }

    /// Checks the lock's response and derives the key it holds for this phone.
    public func complete(_ bytes: [UInt8]) throws(PairingFailure) -> PairedKey {
        let response: PairingResponse
        do { response = try PairingResponse(decoding: bytes) } catch { throw .malformedResponse(error.reason) }
        let fingerprint = PairingKeyAgreement.fingerprint(of: response.lockIdentityKey)
        if expectedFingerprint != fingerprint {
            throw .unexpectedLock(fingerprint: fingerprint)
        }
        let grant = PairingKeyAgreement.Grant(keyID: response.keyID, role: response.role == 1 ? .admin : .user,
                                              mayRequestArrivalUnlock: response.flags & PairingResponse.arrivalFlag != 0)
        let derived: PairingKeyAgreement.Derived
        do {
            let lockEphemeral = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: response.lockPublicKey)
            let lockIdentity = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: response.lockIdentityKey)
            derived = try PairingKeyAgreement.derive(
                ephemeralShared: try ephemeral.sharedSecretFromKeyAgreement(with: lockEphemeral),
                identityShared: try ephemeral.sharedSecretFromKeyAgreement(with: lockIdentity),
                transcript: PairingKeyAgreement.transcript(
                    PairingKeyAgreement.Publics(lockIdentity: response.lockIdentityKey, phonePublic: request.phonePublicKey,
                                                phoneNonce: nonce, lockPublic: response.lockPublicKey,
                                                lockNonce: response.nonce),
                    grant: grant, name: name))
        } catch {
            throw .malformedResponse("unusable public key")
        }
        guard constantTimeEqual(derived.lockConfirmation, response.confirmation) else { throw .confirmationFailed }
        return PairedKey(keyID: grant.keyID, secret: derived.secret, role: grant.role,
                         mayRequestArrivalUnlock: grant.mayRequestArrivalUnlock, lockIdentity: response.lockIdentityKey,
                         comparisonCode: derived.comparisonCode)
    }
}
