import LatchkeyEvents
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
        let engaged: LockoutEngagement?
        switch verifier.authority.countWrongCode(keyID: keyID) {
        case .failure(let denial):
            switch denial.reason {
            case .lockedOut: return .failure(.lockedOut(keyID))
            case .revoked: return .failure(.keyNotAllowed(keyID, .revoked))
            default: return .failure(.keyNotAllowed(keyID, .absent))
            }
        case .success(let e):
            engaged = e
        }
        auditTrail.wrongCode(keyID: keyID, engaged: engaged)
        return .success(engaged)
    }
}
