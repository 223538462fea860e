import LatchkeyLock
import LatchkeySecurity

/// Why a bridge's command did not move the lock.
public enum BridgeCommandRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    case unknownKey(UInt32)
    case lockedOut(UInt32)
    case refused(OperationError)

    public var description: String {
        switch self {
        case .unknownKey(let k): "key \(k) is not a key of this lock (revoked or never added)"
        case .lockedOut(let k): "key \(k) is locked out after failed attempts"
        case .refused(let e): "refused by the lock: \(e)"
        }
    }
}

extension LockAgent {
    /// A lock or unlock from a local bridge (`latchkey mqtt`) acting as its own key `keyID`,
    /// reached through the control socket, whose permissions are the authentication (the
    /// bridge holds no secret). Everything after that is a phone's path: the key must be
    /// current and not locked out, and the lock's rules decide (operating mode — the bridge
    /// is a remote source, so No Remote Lock/Unlock refuses it —, door, busy bolt); the
    /// decision is journalled before the actuator moves and the audit log names the key,
    /// with source ProprietaryRemote.
    public func bridgeCommand(_ operation: LockOperationType, keyID: UInt32) -> Result<DecisionID?, BridgeCommandRefusal> {
        guard let key = verifier.keys.key(id: keyID), !key.revoked else { return .failure(.unknownKey(keyID)) }
        if verifier.lockout.lockedOut(keyID: keyID) != nil { return .failure(.lockedOut(keyID)) }
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
