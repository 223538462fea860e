import LatchkeyLockProtocol
import LatchkeyTransport

/// Issues single-use challenges, one live challenge per link (docs/LOCK-RULES.md rule 1).
///
/// A challenge is 16 random octets, never a counter, so it cannot be predicted; it is
/// valid only on the link it was issued on, only once, and only for `lifetime`. Issuing a
/// new one on a link withdraws the previous one. Time comes from the injected loop.
public final class ChallengeIssuer {
    public let lifetime: Duration
    private let loop: any EventLoop
    private let random: () -> [UInt8]
    private var live: [LinkID: (challenge: [UInt8], expires: Instant)] = [:]

    /// 5 s: several ATT round trips on the slowest connection interval we use, short enough
    /// that a captured command is useless moments later.
    public static let defaultLifetime: Duration = .seconds(5)

    public init(loop: any EventLoop, lifetime: Duration = ChallengeIssuer.defaultLifetime,
                random: @escaping () -> [UInt8] = { RandomSource.system.bytes(CommandFrame.challengeLength) }) {
        self.loop = loop
        self.lifetime = lifetime
        self.random = random
    }

    public func issue(for link: LinkID) -> ChallengeGrant {
        let c = random()
        precondition(c.count == CommandFrame.challengeLength)
        live[link] = (c, loop.now + lifetime)
        let ms = min(Int64(UInt16.max), lifetime.nanoseconds / 1_000_000)
        return ChallengeGrant(challenge: c, lifetimeMilliseconds: UInt16(ms))
    }

    /// Consumes the link's challenge whatever the outcome: a wrong guess burns it too.
    /// True only when `challenge` matches and has not expired.
    public func redeem(_ challenge: [UInt8], on link: LinkID) -> Bool {
        guard let entry = live.removeValue(forKey: link) else { return false }
        guard loop.now < entry.expires else { return false }
        return constantTimeEqual(entry.challenge, challenge)
    }

    public func forget(_ link: LinkID) { live[link] = nil }

    public var liveCount: Int { live.count }
}

/// Compares without an early exit, so timing does not reveal how many octets matched.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var diff: UInt8 = 0
    for i in a.indices { diff |= a[i] ^ b[i] }
    return diff == 0
}
