import LatchkeyLockProtocol
import LatchkeyTransport

/// A command that passed every check, ready for the lock's own policy.
public struct VerifiedCommand: Equatable, Sendable {
    public var key: PhoneKey
    public var body: CommandBody
    public var counter: UInt64
}

/// The lock's gate for control writes. The order is fixed (lock-domain.md rule 6): lengths,
/// then key, then challenge (consumed either way), then the tag, then meaning (body,
/// counter, role). Only after all of them — and after the new counter is durable — does a
/// command reach the lock. Any failure rejects; none moves the lock.
public final class CommandVerifier {
    public let keys: any KeyStore
    public let challenges: ChallengeIssuer

    public init(keys: any KeyStore, challenges: ChallengeIssuer) {
        self.keys = keys
        self.challenges = challenges
    }

    public func verify(_ bytes: [UInt8], on link: LinkID) -> Result<VerifiedCommand, CommandRejection> {
        let frame: CommandFrame
        do { frame = try CommandFrame(decoding: bytes) } catch {
            challenges.forget(link)
            return .failure(.malformed)
        }
        guard let key = keys.key(id: frame.keyID), !key.revoked else {
            challenges.forget(link)
            return .failure(.unknownKey)
        }
        guard challenges.redeem(frame.challenge, on: link) else { return .failure(.staleChallenge) }
        let plain: [UInt8]
        do { plain = try CommandSealing.open(frame, secret: key.secret) } catch {
            return .failure(.authenticationFailed)
        }
        let body: CommandBody
        do { body = try CommandBody(decoding: plain) } catch { return .failure(.malformed) }
        guard frame.counter > keys.lastCounter(keyID: key.id) else { return .failure(.replayedCounter) }
        guard key.permits(body.operation) else { return .failure(.notAuthorized) }
        do { try keys.recordCounter(frame.counter, keyID: key.id) } catch { return .failure(.storageFailure) }
        return .success(VerifiedCommand(key: key, body: body, counter: frame.counter))
    }
}
