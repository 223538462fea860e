import LatchkeyLock
import LatchkeySecurity

/// The bridge's entry (`BridgeEntry`), as the control socket's commands reach it.
extension LockAgent {
    /// A lock or unlock from a local bridge (`latchkey mqtt`) acting as its own key `keyID`, through
    /// the control socket, whose permissions are the authentication (the bridge holds no secret).
    /// `LockAuthority` decides on the key as stored now (`BridgeKeyRule`), then the lock's rules
    /// (operating mode, the bridge being a remote source; door; busy bolt); the decision is
    /// journalled before the actuator moves, and the audit log names the key with source
    /// ProprietaryRemote, refusals included.
    public func bridgeCommand(_ operation: LockOperationType, keyID: UInt32) -> Result<DecisionID?, BridgeCommandRefusal> {
        parts.bridge.command(operation, keyID: keyID)
    }

    /// A wrong unlock code the MQTT bridge refused (`bridge wrong-code` on the control
    /// socket): a failure of the bridge's key, counted in that key's lockout only — the
    /// bridge is one key, and a guesser on the network must not lock every phone out — and
    /// in the audit log as an unlock refused for an invalid credential. Once the key is
    /// locked out nothing more is counted or logged, and the bridge's unlocks are refused
    /// whatever their code (`bridgeCommand`). Returns the lockout this failure engaged.
    public func bridgeWrongCode(keyID: UInt32) -> Result<LockoutEngagement?, BridgeCommandRefusal> {
        parts.bridge.wrongCode(keyID: keyID)
    }

    /// Why the bridge may not read the audit log or the lock's state now, acting as its key
    /// `keyID`; nil when it may (`LockAuthority.logScope`, the one gate for reads too).
    public func bridgeReadRefusal(keyID: UInt32) -> BridgeCommandRefusal? { parts.bridge.readRefusal(keyID: keyID) }
}
