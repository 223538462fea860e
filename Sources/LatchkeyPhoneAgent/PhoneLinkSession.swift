import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeySecurity

/// The phone's half of the link's session (docs/SECURITY.md, "Sessions"). Every sealed
/// command opens a session on the lock once its tag verifies; the phone derives the same
/// key from the frame it sent, and takes it as the link's session when the lock's answer
/// shows the tag verified — or earlier, when a sealed reply opens under it (a status
/// notification may overtake the Write Response).
final class PhoneLinkSession {
    /// A reply opened: its plain bytes, and whether it was the first on the link, which
    /// proves the link is the lock's.
    struct Opened: Equatable {
        var plain: [UInt8]
        var provedTheLock: Bool
    }

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

    private let secret: [UInt8]
    private let events: PhoneEventOutput
    /// The link's session, and the one the command in flight opens.
    private var session: LinkSession?
    private var candidateSession: LinkSession?
    /// A reply sealed to this link's session opened on it: the lock is on this link.
    private var linkVerified = false

    init(secret: [UInt8], events: PhoneEventOutput) {
        self.secret = secret
        self.events = events
    }

    /// The link has a session (the lock accepted a frame's tag on it).
    var isOpen: Bool { session != nil }
    /// A sealed reply opened on this link.
    var isVerified: Bool { linkVerified }

    /// The frame about to be written: the session it opens if the lock accepts its tag.
    func prepareSession(for frame: CommandFrame) {
        candidateSession = LinkSession(opening: frame, secret: secret)
    }

    /// The lock answered the frame `prepareSession` saw.
    func commandAnswered(_ answer: CommandRejection?) {
        defer { candidateSession = nil }
        guard Self.openedASession(answer), let candidate = candidateSession else { return }
        session = candidate
    }

    /// The link ended, or a new one formed: no session, nothing proved.
    func endSession() {
        session = nil
        candidateSession = nil
        linkVerified = false
    }

    /// Opens a sealed reply under the link's session, or under the session the command in
    /// flight is opening (which then becomes the link's); nil when neither opens it.
    func openReply(_ bytes: [UInt8], as kind: SealedReply.Kind) -> Opened? {
        if var current = session, let plain = try? current.open(bytes, as: kind) {
            session = current
            return Opened(plain: plain, provedTheLock: linkProvedTheLock())
        }
        if var candidate = candidateSession, let plain = try? candidate.open(bytes, as: kind) {
            session = candidate
            candidateSession = nil
            return Opened(plain: plain, provedTheLock: linkProvedTheLock())
        }
        emit(.phoneReplyUnreadable(kind: "\(kind)", session: session == nil ? .noSession : .open))
        return nil
    }

    /// The first sealed reply on a link that opened: only the lock holding our key could seal
    /// it, so the link is the lock's (a Write Response proves nothing: anyone answers writes).
    private func linkProvedTheLock() -> Bool {
        guard !linkVerified else { return false }
        linkVerified = true
        emit(.phoneLinkVerified)
        return true
    }

    private func emit(_ event: Event) { events.emit(event) }
}
