import Crypto
import LatchkeyLockProtocol
import LatchkeyTransport

/// What the lock's owner decided when opening a pairing window: the phone does not choose
/// its own role (docs/LOCK-RULES.md rule 2).
public struct PairingOffer: Equatable, Sendable {
    public var role: KeyRole
    /// Off unless the owner asked for it; never granted with a user role (`mayHaveArrivalUnlock`).
    public var mayRequestArrivalUnlock: Bool
    /// The key's name; nil takes the name the phone proposes.
    public var name: String?
    public init(role: KeyRole, mayRequestArrivalUnlock: Bool = false, name: String? = nil) {
        self.role = role; self.mayRequestArrivalUnlock = mayRequestArrivalUnlock; self.name = name
    }
}

/// How a pairing window ended.
public enum PairingOutcome: Equatable, Sendable {
    case paired(PhoneKey, comparisonCode: String)
    /// The window's time ran out (or it was closed) with no phone paired.
    case closedUnused
}

/// The lock's side of pairing (docs/LOCK-RULES.md rule 3): pairing writes are refused unless a
/// window opened on the lock's side — `latchkey pair --window N` over the local control
/// socket — is open. A window admits ONE phone and then closes, so a stranger who pairs
/// first is seen (the owner's own phone is then refused, and `latchkey pair` names the key
/// that was added) and cannot be followed by a second stranger.
///
/// A request is answered at once: the key is derived, stored durably, and the response
/// kept for this link until it is read (or the link goes).
public final class PairingResponder {
    public let identity: LockIdentity
    private let registry: any KeyRegistry
    private let loop: any EventLoop
    private var window: (offer: PairingOffer, timer: Scheduled, done: (PairingOutcome) -> Void)?
    private var responses: [LinkID: [UInt8]] = [:]
    /// Longest window `open` accepts: 10 minutes. Long enough to walk to the door with the
    /// phone; short enough that a forgotten window closes by itself.
    public static let maximumWindow: Duration = .seconds(600)

    public init(identity: LockIdentity, registry: any KeyRegistry, loop: any EventLoop) {
        self.identity = identity
        self.registry = registry
        self.loop = loop
    }

    public var isOpen: Bool { window != nil }

    /// Opens a window for `duration` (at most `maximumWindow`); false when one is open
    /// already. `done` is called once, when a phone paired or the window closed unused.
    @discardableResult
    public func open(for duration: Duration, offer: PairingOffer, done: @escaping (PairingOutcome) -> Void) -> Bool {
        guard window == nil, duration > .zero, duration <= Self.maximumWindow else { return false }
        let timer = loop.schedule(after: duration) { [weak self] in self?.close() }
        window = (offer, timer, done)
        return true
    }

    /// Closes the window now (its owner gave up); nothing paired.
    public func close() {
        guard let w = window else { return }
        window = nil
        w.timer.cancel()
        w.done(.closedUnused)
    }

    /// A pairing write on `link`. On success the new key is stored and returned.
    public func handleRequest(_ bytes: [UInt8], on link: LinkID) -> Result<PhoneKey, CommandRejection> {
        guard let w = window else { return .failure(.pairingClosed) }
        // Malformed requests and keys are refused below with invalidFrame, the attacker learning nothing more.
        guard let request = try? PairingRequest(decoding: bytes),
              let phone = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: request.phonePublicKey) else {
            return .failure(.malformed)
        }
        let ephemeral = Curve25519.KeyAgreement.PrivateKey()
        let keyID: UInt32
        let derived: PairingKeyAgreement.Derived
        let grant: PairingKeyAgreement.Grant
        do {
            keyID = try registry.nextID()
            grant = PairingKeyAgreement.Grant(keyID: keyID, role: w.offer.role,
                                              mayRequestArrivalUnlock: w.offer.mayRequestArrivalUnlock
                                                && w.offer.role.mayHaveArrivalUnlock)
            let lockPublic = Array(ephemeral.publicKey.rawRepresentation)
            derived = try PairingKeyAgreement.derive(
                ephemeralShared: try ephemeral.sharedSecretFromKeyAgreement(with: phone),
                identityShared: try identity.privateKey.sharedSecretFromKeyAgreement(with: phone),
                transcript: PairingKeyAgreement.transcript(lockIdentity: identity.publicKey,
                                                           phonePublic: request.phonePublicKey, lockPublic: lockPublic,
                                                           grant: grant, name: request.name))
            responses[link] = PairingResponse(lockIdentityKey: identity.publicKey, lockPublicKey: lockPublic,
                                              keyID: keyID, role: grant.roleByte, flags: grant.flags,
                                              confirmation: derived.lockConfirmation).bytes
        } catch is CryptoKitError {
            return .failure(.malformed)
        } catch is PairingKeyAgreement.NonContributory {
            return .failure(.malformed)  // a low-order public key: a secret the sender knows
        } catch {
            return .failure(.storageFailure)
        }
        let name = w.offer.name ?? (request.name.isEmpty ? "phone \(keyID)" : request.name)
        let key = PhoneKey(id: keyID, name: name, secret: derived.secret, role: grant.role,
                           mayRequestArrivalUnlock: grant.mayRequestArrivalUnlock)
        do { try registry.add(key) } catch {
            responses[link] = nil
            return .failure(.storageFailure)
        }
        window = nil
        w.timer.cancel()
        w.done(.paired(key, comparisonCode: derived.comparisonCode))
        return .success(key)
    }

    /// The response for `link`'s accepted request, read as often as the central likes
    /// (a long read comes back for each blob) until the link goes.
    public func response(for link: LinkID) -> [UInt8]? { responses[link] }

    public func forget(_ link: LinkID) { responses[link] = nil }
}
