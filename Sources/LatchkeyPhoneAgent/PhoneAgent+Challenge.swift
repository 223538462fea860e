import LatchkeyCentral
import LatchkeyManagers

/// The challenge read ahead on this link (`ChallengeReadAhead` keeps its state).
extension PhoneAgent {
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
}
