import LatchkeyEvents
import LatchkeyLock
import LatchkeySecurity

/// Why a bridge's command did not move the lock.
public enum BridgeCommandRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key `bridge_key_id` names is not (or no longer) fit to act for the bridge: absent,
    /// revoked, an admin key, or one that may ask for arrival unlocks (`BridgeKeyRule`).
    case keyNotAllowed(UInt32, BridgeKeyRule.Problem)
    case lockedOut(UInt32)
    case refused(OperationError)

    public var description: String {
        switch self {
        case .keyNotAllowed(let k, let problem): "the bridge's key \(k) \(problem)"
        case .lockedOut(let k): "key \(k) is locked out after failed attempts"
        case .refused(let e): "refused by the lock: \(e)"
        }
    }
}

/// The lock's entry for a local bridge (`latchkey mqtt`) acting as its own key, through the
/// control socket, whose permissions are the authentication (the bridge holds no secret).
/// `LockAuthority` decides on the key as stored now (`BridgeKeyRule`); a command it allows
/// goes through the same `LockCommandPipeline` as a phone's (the lock's rules; the decision
/// journalled before the actuator moves), and the audit log names the key with source
/// ProprietaryRemote, refusals included.
final class BridgeEntry {
    private let authority: LockAuthority
    private let keys: any KeyStore
    private let pipeline: LockCommandPipeline
    private let audit: AuditTrail
    private let emit: (Event) -> Void
    /// The bolt is moving for an accepted command: wake work until it rests.
    private let moving: () -> Void

    init(authority: LockAuthority, keys: any KeyStore, pipeline: LockCommandPipeline, audit: AuditTrail,
         emit: @escaping (Event) -> Void, moving: @escaping () -> Void) {
        self.authority = authority
        self.keys = keys
        self.pipeline = pipeline
        self.audit = audit
        self.emit = emit
        self.moving = moving
    }

    /// A lock or unlock: the decision it led to (nil when none was needed), or why not.
    func command(_ operation: LockOperationType, keyID: UInt32) -> Result<DecisionID?, BridgeCommandRefusal> {
        let authorization: Authorization
        switch authority.authorize(operation == .lock ? .lock : .unlock, keyID: keyID, via: .bridge) {
        case .failure(let denial):
            let refusal: BridgeCommandRefusal
            switch denial.reason {
            case .lockedOut: refusal = .lockedOut(keyID)
            case .unknownKey: refusal = .keyNotAllowed(keyID, .absent)
            case .revoked: refusal = .keyNotAllowed(keyID, .revoked)
            case .notPermitted, .malformed: refusal = .keyNotAllowed(keyID, BridgeKeyRule.problem(keys.key(id: keyID)) ?? .admin)
            }
            emit(.lockCommandRefused(key: keyID, op: .init(operation), source: "bridge", reason: "\(refusal)"))
            audit.audit(denial)
            return .failure(refusal)
        case .success(let allowed):
            authorization = allowed
        }
        let decided: DecisionID?
        switch pipeline.submit(authorization) {
        case .refused(let error):
            emit(.lockCommandRefused(key: keyID, op: .init(operation), source: "bridge", error: "\(error)"))
            return .failure(.refused(error))
        case .counterNotStored:
            // Only a command with a counter has one to store; were it to fail, the store did.
            return .failure(.refused(.journalFailed))
        case .accepted(let accepted):
            authority.succeeded(authorization)
            if accepted.moving { moving() }
            decided = accepted.decision
        }
        emit(.lockCommandAccepted(key: keyID, op: .init(operation), source: "bridge",
                                  decision: DecisionNumber(decided?.rawValue)))
        return .success(decided)
    }

    /// A wrong unlock code the bridge refused: a failure of the bridge's key, counted in that
    /// key's lockout only, and in the audit log. Returns the lockout this failure engaged.
    func wrongCode(keyID: UInt32) -> Result<LockoutEngagement?, BridgeCommandRefusal> {
        let engaged: LockoutEngagement?
        switch authority.countWrongCode(keyID: keyID) {
        case .failure(let denial):
            switch denial.reason {
            case .lockedOut: return .failure(.lockedOut(keyID))
            case .revoked: return .failure(.keyNotAllowed(keyID, .revoked))
            default: return .failure(.keyNotAllowed(keyID, .absent))
            }
        case .success(let e):
            engaged = e
        }
        audit.wrongCode(keyID: keyID, engaged: engaged)
        return .success(engaged)
    }

    /// Why the bridge may not read the audit log or the lock's state now; nil when it may
    /// (`LockAuthority.logScope`, the one gate for reads too).
    func readRefusal(keyID: UInt32) -> BridgeCommandRefusal? {
        guard authority.logScope(keyID: keyID, via: .bridge) == nil else { return nil }
        return .keyNotAllowed(keyID, BridgeKeyRule.problem(keys.key(id: keyID)) ?? .revoked)
    }
}
