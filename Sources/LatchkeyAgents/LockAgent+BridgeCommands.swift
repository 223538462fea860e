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

/// What the key the bridge acts as must be (docs/SECURITY.md, "The MQTT bridge"): a current
/// key of role `user` that may not ask for arrival unlocks. The broker's side of the house
/// network is less trusted than a phone in the owner's hand, so it never gets more than a
/// household member's rights. Checked when the lock starts and again at every command, on
/// the key as the store holds it then: a key revoked or changed while the lock runs stops
/// the bridge at its next command.
public enum BridgeKeyRule {
    public enum Problem: Equatable, Sendable, CustomStringConvertible {
        case absent, revoked, admin, arrivalUnlock

        public var description: String {
            switch self {
            case .absent: "is not a key of this lock (never added): add a user key with `latchkey keys add --role user`"
            case .revoked: "is revoked"
            case .admin: "is an admin key; the bridge acts as a household member: give it a key of role user"
            case .arrivalUnlock: "may ask for arrival unlocks; the bridge's key must not"
            }
        }

        /// How the audit log files a command refused for it: a revoked key as a revoked
        /// phone's frame is filed, the others as a credential this lock does not take.
        var operationError: OperationError {
            switch self {
            case .revoked: .disabledUserDenied
            case .absent: .invalidCredential
            case .admin, .arrivalUnlock: .restricted
            }
        }
    }

    /// Nil when `key` may act for the bridge.
    public static func problem(_ key: PhoneKey?) -> Problem? {
        guard let key else { return .absent }
        if key.revoked { return .revoked }
        if key.role != .user { return .admin }
        if key.mayRequestArrivalUnlock { return .arrivalUnlock }
        return nil
    }
}

extension LockAgent {
    /// A lock or unlock from a local bridge (`latchkey mqtt`) acting as its own key `keyID`,
    /// reached through the control socket, whose permissions are the authentication (the
    /// bridge holds no secret). The key is read from the store now and must pass
    /// `BridgeKeyRule`; an unlock also must not be locked out (a lock never is: locking is
    /// always safe). Then the lock's rules decide (operating mode — the bridge is a remote
    /// source, so No Remote Lock/Unlock refuses it —, door, busy bolt); the decision is
    /// journalled before the actuator moves and the audit log names the key, with source
    /// ProprietaryRemote ("through the MQTT bridge"). Every refusal of the key is in the
    /// audit log under that key, as a refused phone frame is.
    public func bridgeCommand(_ operation: LockOperationType, keyID: UInt32) -> Result<DecisionID?, BridgeCommandRefusal> {
        if let problem = BridgeKeyRule.problem(verifier.keys.key(id: keyID)) {
            emit("lock.command_refused", ["key": "\(keyID)", "op": "\(operation)", "source": "bridge",
                                          "error": "\(problem.operationError)", "reason": "\(problem)"])
            let record = LockOperationRecord(operation: operation, source: .proprietaryRemote, who: KeyID(keyID))
            lockEvent(securityEvent(.lockOperationError(record, problem.operationError)))
            return .failure(.keyNotAllowed(keyID, problem))
        }
        if operation == .unlock, verifier.lockout.lockedOut(keyID: keyID) != nil { return .failure(.lockedOut(keyID)) }
        let decidedBefore = controller.lastRecordedDecision
        capture = []
        controller.submit(LockCommand(operation == .lock ? .lock : .unlock, source: .proprietaryRemote, who: KeyID(keyID)))
        let emitted = capture ?? []
        capture = nil
        for e in emitted {
            if case .lockOperationError(_, let error) = e.kind {
                emit("lock.command_refused", ["key": "\(keyID)", "op": "\(operation)", "source": "bridge", "error": "\(error)"])
                return .failure(.refused(error))
            }
        }
        if controller.machine.isMoving { backgroundTasks.begin(Self.commandTask) }
        let decided = controller.lastRecordedDecision.flatMap { $0 != decidedBefore ? $0 : nil }
        emit("lock.command_accepted", ["key": "\(keyID)", "op": "\(operation)", "source": "bridge",
                                       "decision": decided.map { "\($0.rawValue)" } ?? "none"])
        return .success(decided)
    }
}
