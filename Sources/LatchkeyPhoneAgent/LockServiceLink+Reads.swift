import LatchkeyCentral
import LatchkeyLockProtocol
import LatchkeyManagers

/// The reads, subscriptions and log requests the link's components ask for, done on the peripheral.
extension LockServiceLink {
    /// Reads the next challenge while the link is idle: after a command's answer, once the
    /// status subscription (if due) is queued — or, after a command that moves the bolt, once
    /// the lock reports it at rest. Not while a command waits (its own read serves it).
    func readChallengeAhead(_ peripheral: Peripheral) {
        guard ready, commandsIdle, peripheral.state == .connected, let challenge,
              readAhead.beginRead() else { return }
        peripheral.readValue(for: challenge)
    }

    /// The lock reported the bolt at rest: the read ahead a moving command put off goes now.
    func readChallengeAheadOnceTheBoltRests(_ peripheral: Peripheral) {
        guard readAhead.boltRested() else { return }
        readChallengeAhead(peripheral)
    }

    /// The answer to `readChallengeAhead`'s read. A command asked for meanwhile goes now.
    func challengeReadAhead(_ peripheral: Peripheral, value: [UInt8]?, error: BluetoothError?) {
        readAhead.answered(value: value, error: error)
        commands.readAheadAnswered()
        linkInterval.linkWentIdle()
    }

    /// Opens a sealed reply under the link's session; the first that opens proves the link
    /// is the lock's, which the presence machine hears. Nil when it does not open.
    func openReply(_ bytes: [UInt8], as kind: SealedReply.Kind) -> [UInt8]? {
        guard let opened = linkSession.openReply(bytes, as: kind) else { return nil }
        if opened.provedTheLock { agent.feed(.linkVerified) }
        return opened.plain
    }

    /// Once the link has a session, the status subscription (the lock refuses it before):
    /// the lock answers it with where it stands, sealed, and notifies each change after. It
    /// waits for the commands queued behind the first: between a challenge read and its
    /// write it would add two round trips to the time the lock measures for an arrival.
    func subscribeOnceInSession(_ peripheral: Peripheral) {
        guard linkSession.isOpen, commandsIdle, let status, !status.isNotifying, peripheral.state == .connected else { return }
        peripheral.setNotifyValue(true, for: status)  // discovers the CCCD first if unknown
    }

    /// Starts a fetch of the lock's audit log (`LogTransfer`) on this link.
    func fetchLog(from sequence: UInt32, limit: UInt16, completion: @escaping (PhoneAgent.LogResult) -> Void) {
        guard let transfer = transferCharacteristic, lock.state == .connected else {
            completion(.failure(.notDelivered("not linked to the lock")))
            return
        }
        let step = logTransfer.start(from: sequence, limit: limit, notifying: transfer.isNotifying,
                                     completion: completion)
        if step != .nothing { linkInterval.linkBecameBusy() }
        carryOut(step)
    }

    /// Does on the link what the log transfer asked for.
    func carryOut(_ step: LogTransfer.Step) {
        guard let transfer = transferCharacteristic else { return }
        switch step {
        case .nothing: break
        case .subscribe: lock.setNotifyValue(true, for: transfer)
        case .write(let bytes): lock.writeValue(bytes, for: transfer)
        }
    }
}
