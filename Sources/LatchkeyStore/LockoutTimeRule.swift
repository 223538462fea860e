import LatchkeyTransport

/// How a lockout's times survive a restart; the sibling of `DecisionDeadlineRule`, with the
/// conservative direction reversed: there, doubt ends an unlock window; here, doubt never
/// ends a lockout early.
///
/// A lockout row holds its instants on the writing process's loop clock, their wall-clock
/// equivalents (`xWall = wallNow + (x - monotonicNow)`, one pair of readings), the wall time
/// of writing, and the writer's random process token.
///
/// - **Same process** (the token matches): the loop instants are used as they are; a wall
///   clock stepped by NTP meanwhile changes nothing.
/// - **Another process** (a restart, a reboot): `x = monotonicNow + (xWall - wallNow)`, so
///   time that passed while no process ran counts, and a lockout that ended while the lock
///   was down has ended.
/// - **The wall clock went backwards** since the row was written (NTP stepping, a Pi without
///   a real-time clock booting at a stale time): the elapsed time is unknown, so the lockout
///   keeps all the time it had left when the row was written, and the last failure counts
///   as just now (its series is not forgiven on a guess).
///
/// A wall clock that jumps FORWARD across a restart shortens a lockout, as it ends an
/// unlock window in the journal: both read the same clock (docs/SECURITY.md, "Limits").
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
