import LatchkeyLock
import LatchkeyTransport

/// How a decision's times survive a restart. The journal stores each instant with its
/// wall-clock equivalent (`xWall = wallNow + (x - monotonicNow)`, one pair of readings); at load
/// it comes back on the new process's clock (`x = monotonicNow + (xWall - wallNow)`), so time
/// that passed while no process ran counts and an unlock whose window passed resolves to
/// locked. A wall clock that went backwards means the elapsed time is unknown: the decision
/// comes back expired (an unlock is never resumed on a guess; a lock always is). The window
/// can only shrink. docs/RESTORATION.md, "Lock decisions that survive death".
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
