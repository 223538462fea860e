import LatchkeyEvents
import LatchkeyLockProtocol

/// A phone whose key the lock revoked stops asking (docs/SECURITY.md, "One gate"): every
/// re-link would otherwise send a `present` the lock must refuse and audit, for as long as
/// the phone lives. A device posing as the lock can say "revoked key" too (a Write Response
/// proves nothing), so the stop is never final: a command its owner asks for by hand, or a
/// restart of the agent, asks again.
extension PhoneAgent {
    func lockSaidOurKeyIsRevoked() {
        guard !keyRevoked else { return }
        keyRevoked = true
        emit(.phoneKeyRevoked(lock: "\(configuration.lockAddress)"))
        central.cancelPeripheralConnection(lockPeripheral)
    }

    /// A command the owner asked for (not the automatic `present` or arrival request) is
    /// worth one more try after "revoked key": the key may have been added back.
    func askAgainIfTheOwnerAsks(_ operation: LockOperation) {
        guard keyRevoked, operation != .present, operation != .arrivalUnlock else { return }
        keyRevoked = false
        emit(.phoneAskingAgain(op: .init(operation)))
        requestConnection()
    }
}
