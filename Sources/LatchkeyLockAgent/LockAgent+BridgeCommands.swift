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

extension LockAgent {
    /// A lock or unlock from a local bridge (`latchkey mqtt`) acting as its own key `keyID`, through
    /// the control socket, whose permissions are the authentication (the bridge holds no secret).
    /// `LockAuthority` decides on the key as stored now (`BridgeKeyRule`), then the lock's rules
    /// (operating mode, the bridge being a remote source; door; busy bolt); the decision is
    /// journalled before the actuator moves, and the audit log names the key with source
    /// ProprietaryRemote, refusals included.
    public func bridgeCommand(_ operation: LockOperationType, keyID: UInt32) -> Result<DecisionID?, BridgeCommandRefusal> {
        let authorization: Authorization
        switch verifier.authority.authorize(operation == .lock ? .lock : .unlock, keyID: keyID, via: .bridge) {
        case .failure(let denial):
            let refusal: BridgeCommandRefusal
            switch denial.reason {
            case .lockedOut: refusal = .lockedOut(keyID)
            case .unknownKey: refusal = .keyNotAllowed(keyID, .absent)
            case .revoked: refusal = .keyNotAllowed(keyID, .revoked)
            case .notPermitted, .malformed: refusal = .keyNotAllowed(keyID, BridgeKeyRule.problem(verifier.keys.key(id: keyID)) ?? .admin)
            }
            emit(.lockCommandRefused(key: "\(keyID)", op: "\(operation)", source: "bridge", reason: "\(refusal)"))
            auditTrail.audit(denial)
            return .failure(refusal)
        case .success(let allowed):
            authorization = allowed
        }
        let decided: DecisionID?
        switch pipeline.submit(authorization) {
        case .refused(let error):
            emit(.lockCommandRefused(key: "\(keyID)", op: "\(operation)", source: "bridge", error: "\(error)"))
            return .failure(.refused(error))
        case .counterNotStored:
            // Only a command with a counter has one to store; were it to fail, the store did.
            return .failure(.refused(.journalFailed))
        case .accepted(let accepted):
            verifier.authority.succeeded(authorization)
            if accepted.moving { backgroundTasks.begin(Self.commandTask) }
            decided = accepted.decision
        }
        emit(.lockCommandAccepted(key: "\(keyID)", op: "\(operation)", source: "bridge",
                                  decision: decided.map { "\($0.rawValue)" } ?? "none"))
        return .success(decided)
    }

    /// Why the bridge may not read the audit log or the lock's state now, acting as its key
    /// `keyID`; nil when it may (`LockAuthority.logScope`, the one gate for reads too).
    public func bridgeReadRefusal(keyID: UInt32) -> BridgeCommandRefusal? {
        guard verifier.authority.logScope(keyID: keyID, via: .bridge) == nil else { return nil }
        return .keyNotAllowed(keyID, BridgeKeyRule.problem(verifier.keys.key(id: keyID)) ?? .revoked)
    }
}
