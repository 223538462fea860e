import LatchkeyTransport

/// Whose failed attempts a count belongs to (docs/LOCK-RULES.md rule 5).
public enum LockoutPrincipal: Hashable, Sendable, CustomStringConvertible {
    /// Every failure, whatever key it named (or none): the lock-wide limit.
    case overall
    /// Failures of frames naming this key, when the lock holds such a key.
    case key(UInt32)

    public var description: String {
        switch self {
        case .overall: "overall"
        case .key(let id): "key \(id)"
        }
    }
}

/// One principal's failed-attempt bookkeeping. Instants are on the lock's loop clock; the
/// durable store converts them to and from wall time across restarts.
public struct LockoutState: Equatable, Sendable {
    /// Failures since the last lockout began, the principal's own success, or forgiveness.
    public var failures: UInt32
    /// Lockouts engaged in the current series: the escalation step.
    public var level: UInt32
    /// Commands are refused until then.
    public var lockedUntil: Instant?
    public var lastFailure: Instant?

    public init(failures: UInt32 = 0, level: UInt32 = 0, lockedUntil: Instant? = nil, lastFailure: Instant? = nil) {
        self.failures = failures; self.level = level; self.lockedUntil = lockedUntil; self.lastFailure = lastFailure
    }

    public static let clean = LockoutState()

    /// Whether the principal has a counted failure in its current series (its own success,
    /// or forgiveness, makes it clean again).
    public var hasFailed: Bool { failures > 0 || level > 0 }
}

/// The limits. Defaults follow Matter's Door Lock attributes as its certification tests set
/// them (WrongCodeEntryLimit 3, UserCodeTemporaryDisableTime 15 s, TC_DRLK_2_x), made
/// escalating as docs/LOCK-RULES.md, "Lockout pitfalls" asks: each further lockout in a
/// series doubles.
public struct LockoutPolicy: Sendable, Equatable {
    /// Failures of one key before it is disabled. Matter WrongCodeEntryLimit (1–255), 3 in TC_DRLK.
    public var perKeyLimit: UInt32 = 3
    /// Failures across all keys (and frames naming no known key) before every command is
    /// refused. Ours: an attacker cycling key ids must hit a limit too; 10 leaves room for a
    /// household's phones each failing a couple of times around the same moment.
    public var overallLimit: UInt32 = 10
    /// The first lockout. Matter UserCodeTemporaryDisableTime (1–255 s), 15 s in TC_DRLK.
    public var disableTime: Duration = .seconds(15)
    /// Doubling stops here: 15 s · 2⁸ = 64 min > 1 h. An hour without remote access is
    /// bearable (the key and the inside button still work); a day is not.
    public var maximumDisableTime: Duration = .seconds(3600)
    /// A series ends (count and step back to zero) after this long without a failure, so a
    /// stale challenge a month ago does not count today. One day: longer than any attack
    /// the escalation has slowed down to a handful of tries.
    public var forgiveAfter: Duration = .seconds(86_400)

    public init() {}

    /// The length of lockout number `level` (1, 2, ...) in a series.
    public func disableTime(atLevel level: UInt32) -> Duration {
        var d = disableTime
        var step: UInt32 = 1
        while step < level && d < maximumDisableTime { d = d * 2; step += 1 }
        return min(d, maximumDisableTime)
    }
}

/// Where the lockout state lives. The lock's implementation is the SQLite store, so a
/// restart neither forgets a count nor ends a lockout early (docs/LOCK-RULES.md rule 5).
public protocol LockoutStore: AnyObject {
    func state(of principal: LockoutPrincipal) throws -> LockoutState
    /// Durable before it returns.
    func save(_ state: LockoutState, of principal: LockoutPrincipal) throws
}

/// Lockout state in memory: tests only (the lock agent is given the SQLite store).
public final class InMemoryLockoutStore: LockoutStore {
    public var states: [LockoutPrincipal: LockoutState] = [:]
    public var failReads = false
    /// A full or read-only store: saves throw, nothing changes.
    public var failSaves = false
    public init() {}
    public func state(of principal: LockoutPrincipal) throws -> LockoutState {
        if failReads { throw InMemoryKeyStore.StoreWriteFailed() }
        return states[principal] ?? .clean
    }
    public func save(_ state: LockoutState, of principal: LockoutPrincipal) throws {
        if failSaves { throw InMemoryKeyStore.StoreWriteFailed() }
        states[principal] = state
    }
}

/// A lockout that a failure just engaged: the alarm's content.
public struct LockoutEngagement: Equatable, Sendable {
    public var principal: LockoutPrincipal
    /// 1 for the first lockout of a series, 2 for the second, ...
    public var level: UInt32
    public var duration: Duration
}
