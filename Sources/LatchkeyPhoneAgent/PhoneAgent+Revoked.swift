import LatchkeyLockProtocol

/// A phone whose key the lock revoked stops asking until its owner asks (`ConnectionRequest`).
extension PhoneAgent {
    /// The lock answered "revoked key": no link, no automatic `present` or arrival, until the
    /// owner asks for a command by hand or restarts the agent.
    public var keyRevoked: Bool { connection.isRevoked }

    func lockSaidOurKeyIsRevoked() {
        guard connection.lockSaidOurKeyIsRevoked() else { return }
        central.cancelPeripheralConnection(lockPeripheral)
    }

    func askAgainIfTheOwnerAsks(_ operation: LockOperation) {
        guard connection.askAgainIfTheOwnerAsks(operation) else { return }
        requestConnection()
    }
}
