import LatchkeyTransport

/// How a lockout's times survive a restart: `DecisionDeadlineRule` with the doubt reversed
/// (there doubt ends an unlock window; here it never ends a lockout early). The same process
/// (its token matches) uses its loop instants as they are; another process maps the stored
/// wall-clock equivalents onto its own clock, so a lockout that ended while the lock was down
/// has ended; a wall clock that went backwards keeps all the time the lockout had left, and
/// the last failure counts as just now. A clock jumping forward across a restart shortens a
/// lockout (docs/SECURITY.md, "Limits").
public enum LockoutTimeRule {
    public struct WallTimes: Hashable, Sendable {
        public var lockedUntil: Int64?
        public var lastFailure: Int64?
        public var recorded: Int64
        public init(lockedUntil: Int64?, lastFailure: Int64?, recorded: Int64) {
            self.lockedUntil = lockedUntil; self.lastFailure = lastFailure; self.recorded = recorded
        }
    }

    /// At write: the wall-clock equivalents of the loop instants.
    public static func wallTimes(lockedUntil: Instant?, lastFailure: Instant?, wallNow: Int64,
                                 monotonicNow: Instant) -> WallTimes {
        WallTimes(lockedUntil: lockedUntil.map { saturating(wallNow, plus: ($0 - monotonicNow).nanoseconds) },
                  lastFailure: lastFailure.map { saturating(wallNow, plus: ($0 - monotonicNow).nanoseconds) },
                  recorded: wallNow)
    }

    /// At read in another process: the instants on this process's loop clock.
    public static func rebase(_ wall: WallTimes, wallNow: Int64,
                              monotonicNow: Instant) -> (lockedUntil: Instant?, lastFailure: Instant?) {
        guard wallNow >= wall.recorded else {
            let left = wall.lockedUntil.map { max(0, $0 &- wall.recorded) }
            return (left.map { Instant(nanoseconds: saturating(monotonicNow.nanoseconds, plus: $0)) },
                    wall.lastFailure.map { _ in monotonicNow })
        }
        func onLoop(_ x: Int64) -> Instant {
            Instant(nanoseconds: saturating(monotonicNow.nanoseconds, plus: x &- wallNow))
        }
        return (wall.lockedUntil.map(onLoop), wall.lastFailure.map(onLoop))
    }

    private static func saturating(_ value: Int64, plus delta: Int64) -> Int64 {
        let (sum, overflow) = value.addingReportingOverflow(delta)
        return overflow ? (delta < 0 ? .min : .max) : sum
    }
}
