import LatchkeyLockProtocol
import LatchkeyTransport

/// A command that passed every check, ready for the lock's own policy.
public struct VerifiedCommand: Sendable {
    public var key: PhoneKey
    public var body: CommandBody
    public var counter: UInt64
    /// The session the command opened on its link (`LinkSession`).
    public var session: LinkSession
    /// What `LockAuthority` allowed: the only thing the lock's controller acts on.
    public var authorization: Authorization
}

/// A command that did not pass, with what the lock may log about it.
public struct CommandFailure: Error, Sendable {
    public var rejection: CommandRejection
    /// The key whose holder sent the frame: set only once its tag verified under that key
    /// (a stranger's frame names a key id it proves nothing about). Never told to the phone.
    public var keyID: UInt32?
    /// The key was revoked (its tag verified; the rejection says `unknownKey`).
    public var revoked: Bool
    /// The operation, when the frame was opened far enough to read it.
    public var operation: LockOperation?
    /// Lockouts this failure engaged (each one a DoorLockAlarm in the audit log).
    public var engaged: [LockoutEngagement]
    /// Whether the failure was counted against the lockout limits: only failures of frames
    /// whose tag verified under a key the lock holds, that is, of the key's holder.
    public var counted: Bool
    /// The link sent its last allowed unauthenticated frame: drop it (after the answer).
    public var dropLink: Bool = false
    /// The tag verified: the frame opened a session on its link even though it was refused
    /// (an arrival refused by policy still lets its phone see the lock's state).
    public var session: LinkSession?
}

extension Result where Success == VerifiedCommand, Failure == CommandFailure {
    /// The rejection the phone is told, or nil when the command was accepted.
    public var rejection: CommandRejection? {
        if case .failure(let f) = self { f.rejection } else { nil }
    }

    /// The session the frame opened, accepted or not.
    public var session: LinkSession? {
        switch self {
        case .success(let v): v.session
        case .failure(let f): f.session
        }
    }
}

/// The lock's authentication of control writes over Bluetooth (docs/SECURITY.md, "Command
/// frames"), in a fixed order: lengths, the challenge (consumed either way), the key, the tag
/// (one answer for "no such key" and "wrong tag"), the body as `LockAuthority` judges it, the
/// counter; a passing command's counter is staged to be durable with its decision. A failure
/// before the tag is a stranger's: it counts only against its link (dropped after
/// `unauthenticatedFrameLimit`), never against a key; one after the tag is the key holder's own
/// and counts towards the lockouts (docs/SECURITY.md, "Strangers"). None moves the lock.
public final class CommandVerifier {
    public let authority: LockAuthority
    public var keys: any KeyStore { authority.keys }
    public var lockout: LockoutGuard { authority.lockout }
    public let challenges: ChallengeIssuer
    /// Unauthenticated frames a link may send; the one that reaches the limit drops it.
    public let unauthenticatedFrameLimit: Int
    private var strikes: [LinkID: Int] = [:]

    /// 3: Matter's WrongCodeEntryLimit in TC_DRLK; a phone with a good key never fails
    /// before its tag, so even one strike is a stranger's (or a corrupt frame's).
    public static let defaultUnauthenticatedFrameLimit = 3

    public init(keys: any KeyStore, challenges: ChallengeIssuer, lockout: LockoutGuard,
                unauthenticatedFrameLimit: Int = CommandVerifier.defaultUnauthenticatedFrameLimit) {
        precondition(unauthenticatedFrameLimit > 0)
        self.authority = LockAuthority(keys: keys, lockout: lockout)
        self.challenges = challenges
        self.unauthenticatedFrameLimit = unauthenticatedFrameLimit
    }

    public func verify(_ bytes: [UInt8], on link: LinkID) -> Result<VerifiedCommand, CommandFailure> {
        let frame: CommandFrame
        do { frame = try CommandFrame(decoding: bytes) } catch {
            challenges.forget(link)
            return strike(.malformed, on: link)
        }
        guard challenges.redeem(frame.challenge, on: link) else { return strike(.staleChallenge, on: link) }
        // An unknown key id and a wrong tag are one answer: a stranger learns no key id.
        guard let key = keys.key(id: frame.keyID) else { return strike(.authenticationFailed, on: link) }
        let plain: [UInt8]
        do { plain = try CommandSealing.open(frame, secret: key.secret) } catch {
            return strike(.authenticationFailed, on: link)
        }
        // Only the key's holder gets this far.
        let body = try? CommandBody(decoding: plain)  // nil: malformed, which the authority counts
        let authorization: Authorization
        switch authority.authorize(body?.operation, keyID: key.id, via: .bluetooth) {
        case .failure(let denial):
            // A key that is revoked, or gone since it was read, is no credential: its frame opens
            // no session (nothing is sealed to it) and leaves the link's strikes as they are.
            let current = denial.reason != .revoked && denial.reason != .unknownKey
            if current { strikes[link] = nil }
            return .failure(CommandFailure(rejection: denial.rejection, keyID: key.id, revoked: denial.reason == .revoked,
                                           operation: body?.operation, engaged: denial.engaged, counted: denial.counted,
                                           session: current ? LinkSession(opening: frame, secret: key.secret) : nil))
        case .success(let allowed):
            authorization = allowed
        }
        strikes[link] = nil
        let session = LinkSession(opening: frame, secret: key.secret)
        guard let body, frame.counter > keys.lastCounter(keyID: key.id) else {
            let engaged = authority.countFailure(keyID: key.id)
            return .failure(CommandFailure(rejection: .replayedCounter, keyID: key.id, revoked: false,
                                           operation: body?.operation, engaged: engaged, counted: true, session: session))
        }
        do { try keys.stageCounter(frame.counter, keyID: key.id) } catch {
            // Our disk, not the phone's fault: not counted.
            return .failure(CommandFailure(rejection: .storageFailure, keyID: key.id, revoked: false,
                                           operation: body.operation, engaged: [], counted: false, session: session))
        }
        authority.succeeded(authorization)
        return .success(VerifiedCommand(key: key, body: body, counter: frame.counter, session: session,
                                        authorization: authorization))
    }

    /// Makes the last verified command's counter durable if the decision it led to did not
    /// already carry it. Run before answering that command; when it throws, the answer is
    /// `storageFailure`.
    public func commitCounter() throws {
        try keys.commitStagedCounter()
    }

    /// The link is gone: its challenge and its strikes go with it.
    public func forget(_ link: LinkID) {
        challenges.forget(link)
        strikes[link] = nil
    }

    /// Unauthenticated frames `link` sent so far.
    public func strikes(on link: LinkID) -> Int { strikes[link] ?? 0 }

    /// A frame that failed before its tag verified: counted against its link only, and
    /// attributed to no key (the key id it names proves nothing).
    private func strike(_ rejection: CommandRejection, on link: LinkID) -> Result<VerifiedCommand, CommandFailure> {
        let n = strikes[link, default: 0] + 1
        strikes[link] = n
        return .failure(CommandFailure(rejection: rejection, keyID: nil, revoked: false, operation: nil, engaged: [],
                                       counted: false, dropLink: n >= unauthenticatedFrameLimit))
    }
}
