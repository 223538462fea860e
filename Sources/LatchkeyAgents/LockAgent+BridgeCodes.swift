import LatchkeyLock
import LatchkeySecurity

extension LockAgent {
    /// A wrong unlock code the MQTT bridge refused (`bridge wrong-code` on the control
    /// socket): a failure of the bridge's key, counted in that key's lockout only — the
    /// bridge is one key, and a guesser on the network must not lock every phone out — and
    /// in the audit log as an unlock refused for an invalid credential. Once the key is
    /// locked out nothing more is counted or logged, and the bridge's unlocks are refused
    /// whatever their code (`bridgeCommand`). Returns the lockout this failure engaged.
    public func bridgeWrongCode(keyID: UInt32) -> Result<LockoutEngagement?, BridgeCommandRefusal> {
        guard let key = verifier.keys.key(id: keyID), !key.revoked else { return .failure(.unknownKey(keyID)) }
        if verifier.lockout.lockedOut(keyID: keyID) != nil { return .failure(.lockedOut(keyID)) }
        let engaged = verifier.lockout.recordKeyFailure(keyID: keyID)
        emit("lock.bridge_wrong_code", ["key": "\(keyID)"])
        let record = LockOperationRecord(operation: .unlock, source: .proprietaryRemote, who: KeyID(keyID))
        lockEvent(securityEvent(.lockOperationError(record, .invalidCredential)))
        if let engaged {
            emit("lock.lockout", ["principal": "\(engaged.principal)", "level": "\(engaged.level)",
                                  "seconds": "\(engaged.duration.components.seconds)", "key": "\(keyID)"])
            lockEvent(securityEvent(.doorLockAlarm(.wrongCodeEntryLimit)))
        }
        return .success(engaged)
    }
}
