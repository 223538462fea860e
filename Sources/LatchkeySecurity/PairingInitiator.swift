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

    public var description: String {
        switch self {
        case .malformedResponse(let why): "malformed pairing response: \(why)"
        case .confirmationFailed: "the lock's key confirmation did not verify"
        case .unexpectedLock(let f): "the lock's identity \(f) is not the expected one"
        case .refused(let r): "the lock refused: \(r)"
        case .notDelivered(let why): "not delivered: \(why)"
        }
    }
}

/// The phone's side of the key agreement: one ephemeral key pair per attempt.
public struct PairingInitiator {
    private let ephemeral = Curve25519.KeyAgreement.PrivateKey()
    public let name: String
    /// When set, only a lock whose identity has this fingerprint is accepted.
    public let expectedFingerprint: String?

    public init(name: String, expectedFingerprint: String? = nil) {
        self.name = PairingRequest(phonePublicKey: Array(repeating: 0, count: 32), name: name).name
        self.expectedFingerprint = expectedFingerprint
    }

    public var request: PairingRequest {
        PairingRequest(phonePublicKey: Array(ephemeral.publicKey.rawRepresentation), name: name)
    }

    /// Checks the lock's response and derives the key it holds for this phone.
    public func complete(_ bytes: [UInt8]) throws(PairingFailure) -> PairedKey {
        let response: PairingResponse
        do { response = try PairingResponse(decoding: bytes) } catch { throw .malformedResponse(error.reason) }
        let fingerprint = PairingKeyAgreement.fingerprint(of: response.lockIdentityKey)
        if let expectedFingerprint, expectedFingerprint.lowercased() != fingerprint {
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
                transcript: PairingKeyAgreement.transcript(lockIdentity: response.lockIdentityKey,
                                                           phonePublic: request.phonePublicKey,
                                                           lockPublic: response.lockPublicKey, grant: grant, name: name))
        } catch {
            throw .malformedResponse("unusable public key")
        }
        guard constantTimeEqual(derived.lockConfirmation, response.confirmation) else { throw .confirmationFailed }
        return PairedKey(keyID: grant.keyID, secret: derived.secret, role: grant.role,
                         mayRequestArrivalUnlock: grant.mayRequestArrivalUnlock, lockIdentity: response.lockIdentityKey,
                         comparisonCode: derived.comparisonCode)
    }
}
