import LatchkeyTransport

/// Counts failed attempts per key and overall and disables them for escalating times
/// (docs/LOCK-RULES.md rule 5; its "Lockout pitfalls" are the design):
///
/// - a failure counts against the overall principal always, and against a key when the
///   frame named a key the lock holds;
/// - reaching a limit engages a lockout of `disableTime · 2^(level-1)` (capped), and the
///   count starts again: the next lockout of the series is twice as long;
/// - only the key's OWN success ends its series; another key's success touches nothing,
///   and nothing but time (`forgiveAfter` without a failure) ends the overall series;
/// - every change is written to the store before the command is answered, so a restart
///   changes nothing;
/// - a store that cannot be read fails closed: everything is locked out.
///
/// Time is the injected loop's.
public final class LockoutGuard {
    public let policy: LockoutPolicy
    private let store: any LockoutStore
    private let loop: any EventLoop
    /// The last error the store raised, for the agent's log.
    public private(set) var lastError: (any Error)?

    public init(store: any LockoutStore, policy: LockoutPolicy = LockoutPolicy(), loop: any EventLoop) {
        self.store = store
        self.policy = policy
        self.loop = loop
    }

    /// The principal whose lockout refuses a command naming `keyID` now, the overall one
    /// first; nil when none does. Pass nil before the key id is known.
    public func lockedOut(keyID: UInt32?) -> LockoutPrincipal? {
        let now = loop.now
        var principals: [LockoutPrincipal] = [.overall]
        if let keyID { principals.append(.key(keyID)) }
        for p in principals {
            do {
                if let until = try store.state(of: p).lockedUntil, now < until { return p }
            } catch {
                lastError = error
                return .overall
            }
        }
        return nil
    }

    /// Counts one failure; returns the lockouts it engaged (none, one, or both).
    @discardableResult
    public func recordFailure(keyID: UInt32?) -> [LockoutEngagement] {
        var engaged: [LockoutEngagement] = []
        if let e = count(.overall, limit: policy.overallLimit) { engaged.append(e) }
        if let keyID, let e = count(.key(keyID), limit: policy.perKeyLimit) { engaged.append(e) }
        return engaged
    }

    /// The key's own success ends its series (never another key's, never the overall one).
    public func recordSuccess(keyID: UInt32) {
        do {
            guard try store.state(of: .key(keyID)) != .clean else { return }
            try store.save(.clean, of: .key(keyID))
        } catch {
            lastError = error
        }
    }

    private func count(_ principal: LockoutPrincipal, limit: UInt32) -> LockoutEngagement? {
        let now = loop.now
        var s: LockoutState
        do { s = try store.state(of: principal) } catch {
            lastError = error
            return nil
        }
        let quietSince = max(s.lastFailure ?? now, s.lockedUntil ?? now)
        if s.lastFailure != nil, now - quietSince >= policy.forgiveAfter { s = .clean }
        s.failures += 1
        s.lastFailure = now
        var engagement: LockoutEngagement?
        if s.failures >= limit {
            s.level += 1
            s.failures = 0
            let d = policy.disableTime(atLevel: s.level)
            s.lockedUntil = now + d
            engagement = LockoutEngagement(principal: principal, level: s.level, duration: d)
        }
        do { try store.save(s, of: principal) } catch { lastError = error }
        return engagement
    }
}
