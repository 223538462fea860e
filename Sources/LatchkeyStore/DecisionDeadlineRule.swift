import LatchkeyLock
import LatchkeyTransport

/// How a decision's times survive a restart.
///
/// A `LockDecision` holds `Instant`s on the lock's monotonic clock (CLOCK_MONOTONIC on the
/// real loop), which means nothing to the next process after a reboot and, in the
/// simulation, restarts at zero in every process. So the journal stores both:
///
/// - **at record**: the instants as given, and their wall-clock equivalents, anchored on one
///   pair of readings taken together — `wallNow` (CLOCK_REALTIME) and `monotonicNow` (the
///   loop's clock): `xWall = wallNow + (x - monotonicNow)` for `decidedAt` and `deadline`.
///   The wall time of recording is kept too.
/// - **at load**: the decision comes back on the NEW process's monotonic clock, anchored on a
///   fresh pair of readings: `x = monotonicNow + (xWall - wallNow)`. Time that passed while
///   no process ran (a crash, a reboot, days away) is thereby counted, so an unlock whose
///   window has passed comes back with `deadline <= monotonicNow`: `isValid(at:)` is false
///   and the lock resolves to locked.
/// - **a wall clock that went backwards** (now earlier than the recording — NTP stepping, a
///   Pi without a real-time clock booting at a stale time) means the elapsed time is
///   unknown: the decision comes back expired (`deadline == monotonicNow`). An unlock is
///   never resumed on a guess; a lock is resumed whatever its deadline says.
///
/// The window can only shrink: the remaining time at load is at most what remained when
/// the decision was recorded.
public enum DecisionDeadlineRule {
    /// Wall-clock equivalents of a decision's instants, as stored.
    public struct WallTimes: Hashable, Sendable {
        public var recorded: Int64
        public var decided: Int64
        public var deadline: Int64

        public init(recorded: Int64, decided: Int64, deadline: Int64) {
            self.recorded = recorded
            self.decided = decided
            self.deadline = deadline
        }
    }

    /// At record: the decision's instants on the wall clock.
    public static func wallTimes(of decision: LockDecision, wallNow: Int64, monotonicNow: Instant) -> WallTimes {
        WallTimes(recorded: wallNow,
                  decided: saturating(wallNow, plus: (decision.decidedAt - monotonicNow).nanoseconds),
                  deadline: saturating(wallNow, plus: (decision.deadline - monotonicNow).nanoseconds))
    }

    /// At load: `decision` (as recorded) with its instants moved onto the current process's
    /// monotonic clock.
    public static func rebase(_ decision: LockDecision, wall: WallTimes, wallNow: Int64,
                              monotonicNow: Instant) -> LockDecision {
        var rebased = decision
        let window = decision.deadline - decision.decidedAt
        guard wallNow >= wall.recorded else {
            rebased.deadline = monotonicNow
            rebased.decidedAt = monotonicNow - window
            return rebased
        }
        rebased.decidedAt = Instant(nanoseconds: saturating(monotonicNow.nanoseconds, plus: wall.decided &- wallNow))
        rebased.deadline = Instant(nanoseconds: saturating(monotonicNow.nanoseconds, plus: wall.deadline &- wallNow))
        return rebased
    }

    /// Whether an interrupted decision may still be carried out now: a lock always, an
    /// unlock only inside its window (the lock state machine applies the same rule).
    public static func mayResume(_ rebased: LockDecision, monotonicNow: Instant) -> Bool {
        rebased.operation == .lock || rebased.isValid(at: monotonicNow)
    }

    private static func saturating(_ value: Int64, plus delta: Int64) -> Int64 {
        let (sum, overflow) = value.addingReportingOverflow(delta)
        return overflow ? (delta < 0 ? .min : .max) : sum
    }
}
