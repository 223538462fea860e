import LatchkeyLockProtocol
import LatchkeyTransport

/// A command that passed every check, ready for the lock's own policy.
public struct VerifiedCommand: Equatable, Sendable {
    public var key: PhoneKey
    public var body: CommandBody
    public var counter: UInt64
}

/// A command that did not pass, with what the lock may log about it.
public struct CommandFailure: Error, Equatable, Sendable {
    public var rejection: CommandRejection
    /// The key the frame named, when the lock holds (or held) such a key.
    public var keyID: UInt32?
    /// The key was revoked (the rejection says only `unknownKey`).
    public var revoked: Bool
    /// The operation, when the frame was opened far enough to read it.
    public var operation: LockOperation?
    /// Lockouts this failure engaged (each one a DoorLockAlarm in the audit log).
    public var engaged: [LockoutEngagement]
    /// Whether the failure was counted against the lockout limits.
    public var counted: Bool
}

extension Result where Success == VerifiedCommand, Failure == CommandFailure {
    /// The rejection the phone is told, or nil when the command was accepted.
    public var rejection: CommandRejection? {
        if case .failure(let f) = self { f.rejection } else { nil }
    }
}

/// The lock's gate for control writes. The order is fixed (docs/LOCK-RULES.md rules 5 and 6):
/// the overall lockout, lengths, the key's lockout, then key, then challenge (consumed
/// either way), then the tag, then meaning (body, counter, role). Only after all of them
/// does a command reach the lock, its new counter staged (`KeyStore.stageCounter`): durable
/// with the decision it leads to, or by `commitCounter()` before its answer. Any failure
/// rejects and counts towards a lockout; none moves the lock. A command refused for a
/// lockout is not evaluated further and not counted (so an attack during a lockout neither
/// extends it nor floods the audit log).
public final class CommandVerifier {
    public let keys: any KeyStore
    public let challenges: ChallengeIssuer
    public let lockout: LockoutGuard

    public init(keys: any KeyStore, challenges: ChallengeIssuer, lockout: LockoutGuard) {
        self.keys = keys
        self.challenges = challenges
        self.lockout = lockout
    }

    public func verify(_ bytes: [UInt8], on link: LinkID) -> Result<VerifiedCommand, CommandFailure> {
        if lockout.lockedOut(keyID: nil) != nil { return refuseLockedOut(link) }
        let frame: CommandFrame
        do { frame = try CommandFrame(decoding: bytes) } catch {
            challenges.forget(link)
            return fail(.malformed, keyID: nil)
        }
        if lockout.lockedOut(keyID: frame.keyID) != nil { return refuseLockedOut(link) }
        guard let key = keys.key(id: frame.keyID) else {
            challenges.forget(link)
            return fail(.unknownKey, keyID: nil)
        }
        guard !key.revoked else {
            challenges.forget(link)
            return fail(.unknownKey, keyID: key.id, revoked: true)
        }
        guard challenges.redeem(frame.challenge, on: link) else { return fail(.staleChallenge, keyID: key.id) }
        let plain: [UInt8]
        do { plain = try CommandSealing.open(frame, secret: key.secret) } catch {
            return fail(.authenticationFailed, keyID: key.id)
        }
        let body: CommandBody
        do { body = try CommandBody(decoding: plain) } catch { return fail(.malformed, keyID: key.id) }
        guard frame.counter > keys.lastCounter(keyID: key.id) else {
            return fail(.replayedCounter, keyID: key.id, operation: body.operation)
        }
        guard key.permits(body.operation) else { return fail(.notAuthorized, keyID: key.id, operation: body.operation) }
        do { try keys.stageCounter(frame.counter, keyID: key.id) } catch {
            // Our disk, not the phone's fault: not counted.
            return .failure(CommandFailure(rejection: .storageFailure, keyID: key.id, revoked: false,
                                           operation: body.operation, engaged: [], counted: false))
        }
        lockout.recordSuccess(keyID: key.id)
        return .success(VerifiedCommand(key: key, body: body, counter: frame.counter))
    }

    /// Makes the last verified command's counter durable if the decision it led to did not
    /// already carry it. Run before answering that command; when it throws, the answer is
    /// `storageFailure`.
    public func commitCounter() throws {
        try keys.commitStagedCounter()
    }

    private func refuseLockedOut(_ link: LinkID) -> Result<VerifiedCommand, CommandFailure> {
        challenges.forget(link)
        return .failure(CommandFailure(rejection: .lockedOut, keyID: nil, revoked: false, operation: nil, engaged: [],
                                       counted: false))
    }

    private func fail(_ rejection: CommandRejection, keyID: UInt32?, revoked: Bool = false,
                      operation: LockOperation? = nil) -> Result<VerifiedCommand, CommandFailure> {
        // A revoked key's failures count overall only: its own series no longer matters.
        let engaged = lockout.recordFailure(keyID: revoked ? nil : keyID)
        return .failure(CommandFailure(rejection: rejection, keyID: keyID, revoked: revoked, operation: operation,
                                       engaged: engaged, counted: true))
    }
}
