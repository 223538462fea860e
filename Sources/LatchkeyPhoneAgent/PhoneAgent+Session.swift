import LatchkeyCentral
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity

/// The phone's half of the link's session (docs/SECURITY.md, "Sessions"). Every sealed
/// command opens a session on the lock once its tag verifies; the phone derives the same
/// key from the frame it sent, and takes it as the link's session when the lock's answer
/// shows the tag verified — or earlier, when a sealed reply opens under it (a status
/// notification may overtake the Write Response).
extension PhoneAgent {
    /// The answers a lock gives only after the frame's tag verified under a key it holds and
    /// has not revoked: the frame opened a session.
    static func openedASession(_ answer: CommandRejection?) -> Bool {
        switch answer {
        case nil: true
        case .malformed?, .unknownKey?, .authenticationFailed?, .staleChallenge?, .pairingClosed?, .noSession?: false
        case .replayedCounter?, .notAuthorized?, .lockedOut?, .refusedByPolicy?, .actuatorDisabled?, .storageFailure?,
             .busy?: true
        }
    }

    /// The frame about to be written: the session it opens if the lock accepts its tag.
    func prepareSession(for frame: CommandFrame) {
        candidateSession = LinkSession(opening: frame, secret: configuration.secret)
    }

    /// The lock answered the frame `prepareSession` saw.
    func commandAnswered(_ answer: CommandRejection?) {
        defer { candidateSession = nil }
        guard Self.openedASession(answer), let candidate = candidateSession else { return }
        session = candidate
    }

    /// Once the link has a session, the status subscription (the lock refuses it before):
    /// the lock answers it with where it stands, sealed, and notifies each change after. It
    /// waits for the commands queued behind the first: between a challenge read and its
    /// write it would add two round trips to the time the lock measures for an arrival.
    func subscribeOnceInSession(_ peripheral: Peripheral) {
        guard session != nil, commandsIdle, let status, !status.isNotifying, peripheral.state == .connected else { return }
        peripheral.setNotifyValue(true, for: status)  // discovers the CCCD first if unknown
    }

    /// The first sealed reply on a link that opened: only the lock holding our key could seal
    /// it, so the link is the lock's (a Write Response proves nothing: anyone answers writes).
    private func linkProvedTheLock() {
        guard !linkVerified else { return }
        linkVerified = true
        emit(.phoneLinkVerified)
        feed(.linkVerified)
    }

    func endSession() {
        session = nil
        candidateSession = nil
    }

    /// Opens a sealed reply under the link's session, or under the session the command in
    /// flight is opening (which then becomes the link's); nil when neither opens it.
    func openReply(_ bytes: [UInt8], as kind: SealedReply.Kind) -> [UInt8]? {
        if var current = session, let plain = try? current.open(bytes, as: kind) {
            session = current
            linkProvedTheLock()
            return plain
        }
        if var candidate = candidateSession, let plain = try? candidate.open(bytes, as: kind) {
            session = candidate
            candidateSession = nil
            linkProvedTheLock()
            return plain
        }
        emit(.phoneReplyUnreadable(kind: "\(kind)", session: session == nil ? .noSession : .open))
        return nil
    }
}
