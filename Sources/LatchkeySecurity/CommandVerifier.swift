import LatchkeyLockProtocol
import LatchkeyTransport

/// A command that passed every check, ready for the lock's own policy.
public struct VerifiedCommand: Sendable {
    public var key: PhoneKey
    public var body: CommandBody
    public var counter: UInt64
    /// The session the command opened on its link (`LinkSession`).
    public var session: LinkSession
}

/// A command that did not pass, with what the lock may log about it.
public struct CommandFailure: Error, Sendable {
    public var rejection: CommandRejection
    /// The key the frame named, when the lock holds (or held) such a key. Never told to
    /// the phone: the rejection alone does not say whether a key id exists.
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

/// The lock's gate for control writes (docs/SECURITY.md, "Command frames"). The order is
/// fixed: lengths, the challenge (consumed either way), the key, the tag — a stranger's
/// frame fails one of these, whatever key id it names, with one answer for "no such key"
/// and "wrong tag" — then the revocation, then meaning: body, the lockout (never for
/// `lock`: locking is always safe), counter, role. Only after all of them does a command
/// reach the lock, its new counter staged (`KeyStore.stageCounter`): durable with the
/// decision it leads to, or by `commitCounter()` before its answer.
///
/// A frame that fails before its tag verified is a stranger's (or noise): it counts only
/// against its link, which is dropped after `unauthenticatedFrameLimit` of them — never
/// against a key or the whole lock, so nobody without a key can lock anyone out. A
/// failure after the tag verified is the key holder's own and counts towards the lockouts.
/// None moves the lock. A command refused for a lockout is not counted (so an attempt
/// during a lockout neither extends it nor floods the audit log).
public final class CommandVerifier {
    public let keys: any KeyStore
    public let challenges: ChallengeIssuer
    public let lockout: LockoutGuard
    /// Unauthenticated frames a link may send; the one that reaches the limit drops it.
    public let unauthenticatedFrameLimit: Int
    private var strikes: [LinkID: Int] = [:]

    /// 3: Matter's WrongCodeEntryLimit in TC_DRLK; a phone with a good key never fails
    /// before its tag, so even one strike is a stranger's (or a corrupt frame's).
    public static let defaultUnauthenticatedFrameLimit = 3

    public init(keys: any KeyStore, challenges: ChallengeIssuer, lockout: LockoutGuard,
                unauthenticatedFrameLimit: Int = CommandVerifier.defaultUnauthenticatedFrameLimit) {
        precondition(unauthenticatedFrameLimit > 0)
        self.keys = keys
        self.challenges = challenges
        self.lockout = lockout
        self.unauthenticatedFrameLimit = unauthenticatedFrameLimit
    }

    public func verify(_ bytes: [UInt8], on link: LinkID) -> Result<VerifiedCommand, CommandFailure> {
        let frame: CommandFrame
        do { frame = try CommandFrame(decoding: bytes) } catch {
            challenges.forget(link)
            return strike(.malformed, on: link, keyID: nil)
        }
        guard challenges.redeem(frame.challenge, on: link) else {
            return strike(.staleChallenge, on: link, keyID: keys.key(id: frame.keyID)?.id)
        }
        // An unknown key id and a wrong tag are one answer: a stranger learns no key id.
        guard let key = keys.key(id: frame.keyID) else { return strike(.authenticationFailed, on: link, keyID: nil) }
        let plain: [UInt8]
        do { plain = try CommandSealing.open(frame, secret: key.secret) } catch {
            return strike(.authenticationFailed, on: link, keyID: key.id)
        }
        // Only the key's holder gets this far: telling it the key is revoked reveals nothing.
        guard !key.revoked else {
            return .failure(CommandFailure(rejection: .unknownKey, keyID: key.id, revoked: true, operation: nil,
                                           engaged: [], counted: false))
        }
        let session = LinkSession(opening: frame, secret: key.secret)
        strikes[link] = nil
        let body: CommandBody
        do { body = try CommandBody(decoding: plain) } catch {
            return fail(.malformed, key: key.id, operation: nil, session: session)
        }
        if body.operation != .lock, lockout.lockedOut(keyID: key.id) != nil {
            return .failure(CommandFailure(rejection: .lockedOut, keyID: key.id, revoked: false,
                                           operation: body.operation, engaged: [], counted: false, session: session))
        }
        guard frame.counter > keys.lastCounter(keyID: key.id) else {
            return fail(.replayedCounter, key: key.id, operation: body.operation, session: session)
        }
        guard key.permits(body.operation) else {
            return fail(.notAuthorized, key: key.id, operation: body.operation, session: session)
        }
        do { try keys.stageCounter(frame.counter, keyID: key.id) } catch {
            // Our disk, not the phone's fault: not counted.
            return .failure(CommandFailure(rejection: .storageFailure, keyID: key.id, revoked: false,
                                           operation: body.operation, engaged: [], counted: false, session: session))
        }
        lockout.recordSuccess(keyID: key.id)
        return .success(VerifiedCommand(key: key, body: body, counter: frame.counter, session: session))
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

    /// A frame that failed before its tag verified: counted against its link only.
    private func strike(_ rejection: CommandRejection, on link: LinkID,
                        keyID: UInt32?) -> Result<VerifiedCommand, CommandFailure> {
        let n = strikes[link, default: 0] + 1
        strikes[link] = n
        return .failure(CommandFailure(rejection: rejection, keyID: keyID, revoked: false, operation: nil, engaged: [],
                                       counted: false, dropLink: n >= unauthenticatedFrameLimit))
    }

    /// A failure of the key's holder: counted against the key and overall.
    private func fail(_ rejection: CommandRejection, key: UInt32, operation: LockOperation?,
                      session: LinkSession) -> Result<VerifiedCommand, CommandFailure> {
        let engaged = lockout.recordFailure(keyID: key)
        return .failure(CommandFailure(rejection: rejection, keyID: key, revoked: false, operation: operation,
                                       engaged: engaged, counted: true, session: session))
    }
}
