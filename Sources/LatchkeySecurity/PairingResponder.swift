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

/// A phone's key the lock holds until its owner confirms the code: it authorises nothing
/// (it is in no key store) until `PairingResponder.confirm` enrols it.
public struct PendingPairing: Equatable, Sendable {
    public var key: PhoneKey
    /// The six digits the phone shows too; the owner compares them.
    public var comparisonCode: String
}

/// Why a phone's key was not enrolled after all.
public enum NotEnrolledReason: String, Equatable, Sendable {
    /// The owner typed a code that is not this exchange's: someone else's exchange, or a typo.
    case codeMismatch = "code-mismatch"
    /// The owner said the codes differ.
    case refusedByOwner = "refused-by-owner"
    /// Nobody confirmed within `PairingResponder.confirmationTimeout`.
    case timedOut = "timed-out"
    /// The key could not be stored.
    case storageFailure = "storage-failure"
}

/// How a pairing window ended.
public enum PairingOutcome: Equatable, Sendable {
    case paired(PhoneKey, comparisonCode: String)
    /// The window's time ran out (or it was closed) with no phone asking.
    case closedUnused
    /// A phone asked, and its key was not enrolled: the window is closed, the attempt is audited.
    case notEnrolled(PendingPairing, NotEnrolledReason)
}

/// What the responder has seen since the agent started (`latchkey lock-ctl status`).
public struct PairingCounts: Equatable, Sendable {
    /// Every write to the pairing characteristic.
    public var requests = 0
    /// Writes refused: malformed, outside a window, or past the per-link limit.
    public var refused = 0
    /// Exchanges whose key the owner did not confirm (mismatch, refusal, timeout).
    public var notEnrolled = 0
    public init() {}
}

/// The lock's side of pairing (docs/LOCK-RULES.md rule 3; docs/SECURITY.md, "Pairing"). Writes
/// are refused unless a window opened on the lock's side is open; the window takes ONE
/// well-formed request, keeps its key pending in no key store until the owner confirms the
/// code, and a wrong code, a "no" or the timeout closes it having enrolled nothing: one guess
/// per window for a stranger or a relay. A request is parsed before the window is looked at,
/// so junk gets the same answer either way; a link may write at most `maximumWritesPerLink`.
public final class PairingResponder {
    public let identity: LockIdentity
    private let registry: any KeyRegistry
    private let loop: any EventLoop
    private struct Window {
        var offer: PairingOffer
        var timer: Scheduled
        var pending: PendingPairing?
        var asked: (PendingPairing) -> Void
        var done: (PairingOutcome) -> Void
    }
    private var window: Window?
    private var responses: [LinkID: [UInt8]] = [:]
    private var writes: [LinkID: Int] = [:]
    public private(set) var counts = PairingCounts()
    /// Longest window `open` accepts: 10 minutes. Long enough to walk to the door with the
    /// phone; short enough that a forgotten window closes by itself.
    public static let maximumWindow: Duration = .seconds(600)
    /// How long the owner has to confirm the code once a phone asked: the window's timer is
    /// replaced by this one, so a phone that asks in the window's last second leaves time.
    public static let confirmationTimeout: Duration = .seconds(120)
    /// A genuine phone writes once per link; a few more allow a retry after a lost answer.
    public static let maximumWritesPerLink = 3

    /// Where each exchange's ephemeral key and nonce are drawn from.
    private let random: RandomSource

    public init(identity: LockIdentity, registry: any KeyRegistry, loop: any EventLoop, random: RandomSource = .system) {
        self.identity = identity
        self.registry = registry
        self.loop = loop
        self.random = random
    }

    public var isOpen: Bool { window != nil }
    /// The key waiting for the owner's confirmation, if any.
    public var pending: PendingPairing? { window?.pending }

    /// Opens a window for `duration` (at most `maximumWindow`); false when one is open
    /// already. `asked` is called when a phone's key is pending (show its code to the owner);
    /// `done` once, when a key was enrolled, refused, or the window closed unused.
    @discardableResult
    public func open(for duration: Duration, offer: PairingOffer, asked: @escaping (PendingPairing) -> Void = { _ in },
                     done: @escaping (PairingOutcome) -> Void) -> Bool {
        guard window == nil, duration > .zero, duration <= Self.maximumWindow else { return false }
        let timer = loop.schedule(after: duration) { [weak self] in self?.timeOut() }
        window = Window(offer: offer, timer: timer, asked: asked, done: done)
        return true
    }

    /// Closes the window now (its owner gave up); a pending key is not enrolled.
    public func close() {
        guard let w = window else { return }
        end(w.pending.map { .notEnrolled($0, .refusedByOwner) } ?? .closedUnused)
    }

    private func timeOut() {
        guard let w = window else { return }
        end(w.pending.map { .notEnrolled($0, .timedOut) } ?? .closedUnused)
    }

    private func end(_ outcome: PairingOutcome) {
        guard let w = window else { return }
        window = nil
        w.timer.cancel()
        if case .notEnrolled = outcome { counts.notEnrolled += 1 }
        w.done(outcome)
    }

    /// The owner's answer: `code` is the code the phone shows (or the one the lock showed,
    /// when the owner answered "yes, they match"). A match enrols the key; anything else
    /// closes the window. Nil when no key is pending (nothing changes).
    @discardableResult
    public func confirm(code: String) -> PairingOutcome? {
        guard let pending = window?.pending else { return nil }
        guard constantTimeEqual(Array(code.utf8), Array(pending.comparisonCode.utf8)) else {
            end(.notEnrolled(pending, .codeMismatch))
            return .notEnrolled(pending, .codeMismatch)
        }
        let outcome: PairingOutcome
        do {
            try registry.add(pending.key)
            outcome = .paired(pending.key, comparisonCode: pending.comparisonCode)
        } catch {
            outcome = .notEnrolled(pending, .storageFailure)
        }
        end(outcome)
        return outcome
    }

    /// The owner said the codes differ; nil when no key is pending.
    @discardableResult
    public func reject() -> PairingOutcome? {
        guard let pending = window?.pending else { return nil }
        end(.notEnrolled(pending, .refusedByOwner))
        return .notEnrolled(pending, .refusedByOwner)
    }

    /// A pairing write on `link`. On success the new key is pending, and the response waits
    /// for the phone's read on this link.
    public func handleRequest(_ bytes: [UInt8], on link: LinkID) -> Result<PendingPairing, CommandRejection> {
        counts.requests += 1
        let result = evaluate(bytes, on: link)
        if case .failure = result { counts.refused += 1 }
        return result
    }

    private func evaluate(_ bytes: [UInt8], on link: LinkID) -> Result<PendingPairing, CommandRejection> {
        writes[link, default: 0] += 1
        // Past the limit, every write gets one answer, whatever it holds and whatever the window.
        guard writes[link]! <= Self.maximumWritesPerLink else { return .failure(.pairingClosed) }
        // Parsed first: junk is malformed whether or not a window is open, so it finds none.
        guard let request = try? PairingRequest(decoding: bytes),
              let phone = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: request.phonePublicKey) else {
            return .failure(.malformed)
        }
        // One request per window: a key pending confirmation shuts the window to every other.
        guard let w = window, w.pending == nil else { return .failure(.pairingClosed) }
        let ephemeral = random.agreementKey()
        let nonce = random.bytes(PairingRequest.nonceLength)
        let keyID: UInt32
        let derived: PairingKeyAgreement.Derived
        let grant: PairingKeyAgreement.Grant
        do {
            keyID = try registry.nextID()
            grant = PairingKeyAgreement.Grant(keyID: keyID, role: w.offer.role,
                                              mayRequestArrivalUnlock: w.offer.mayRequestArrivalUnlock
                                                && w.offer.role.mayHaveArrivalUnlock)
            let lockPublic = Array(ephemeral.publicKey.rawRepresentation)
            let publics = PairingKeyAgreement.Publics(lockIdentity: identity.publicKey, phonePublic: request.phonePublicKey,
                                                      phoneNonce: request.nonce, lockPublic: lockPublic, lockNonce: nonce)
            derived = try PairingKeyAgreement.derive(
                ephemeralShared: try ephemeral.sharedSecretFromKeyAgreement(with: phone),
                identityShared: try identity.privateKey.sharedSecretFromKeyAgreement(with: phone),
                transcript: PairingKeyAgreement.transcript(publics, grant: grant, name: request.name))
            responses[link] = PairingResponse(lockIdentityKey: identity.publicKey, lockPublicKey: lockPublic, nonce: nonce,
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
        let pending = PendingPairing(
            key: PhoneKey(id: keyID, name: name, secret: derived.secret, role: grant.role,
                          mayRequestArrivalUnlock: grant.mayRequestArrivalUnlock),
            comparisonCode: derived.comparisonCode)
        // The owner gets the confirmation's time from now, whatever was left of the window.
        w.timer.cancel()
        window?.timer = loop.schedule(after: Self.confirmationTimeout) { [weak self] in self?.timeOut() }
        window?.pending = pending
        w.asked(pending)
        return .success(pending)
    }

    /// The response for `link`'s accepted request, read as often as the central likes
    /// (a long read comes back for each blob) until the link goes.
    public func response(for link: LinkID) -> [UInt8]? { responses[link] }

    public func forget(_ link: LinkID) {
        responses[link] = nil
        writes[link] = nil
    }
}
