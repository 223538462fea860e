import LatchkeyLock
import LatchkeyStore
import LatchkeyTransport

/// Matches each rise of the unlock line to the unlock decision that allowed it, exactly: one
/// recorded before it, still valid and still open at the rise, carried by the process that
/// drove the line, and not yet spent by that process. Times are CLOCK_MONOTONIC on both sides.
/// docs/TESTING.md, "What the torture audit checks".
package struct UnlockRiseAudit {
    /// A start of the lock process, and the decision it found open in the journal (which it
    /// takes up: a lock resumes it, an unlock inside its window too).
    package struct Start: Hashable {
        package var at: Instant
        package var foundOpen: UInt64?
        package init(at: Instant, foundOpen: UInt64?) { self.at = at; self.foundOpen = foundOpen }
    }

    /// Why a rise has no decision.
    package enum Reason: Hashable, Sendable, CustomStringConvertible {
        case noDecision
        case pastWindow(decision: UInt64, late: Duration)
        case ended(decision: UInt64, outcome: DecisionOutcome)
        case spent(decision: UInt64, onRiseAt: Instant)
        case notCarried(decision: UInt64)

        package var description: String {
            switch self {
            case .noDecision: "no unlock decision was recorded before it"
            case .pastWindow(let id, let late): "decision #\(id) was past its window (by \(late.milliseconds) ms)"
            case .ended(let id, let outcome): "decision #\(id) had already ended (\(outcome))"
            case .spent(let id, let at): "decision #\(id) had already explained the rise at \(at)"
            case .notCarried(let id): "decision #\(id) was not taken up by the lock process running then"
            }
        }
    }

    package struct Unexplained: Hashable, CustomStringConvertible {
        package var at: Instant
        package var reason: Reason
        package var description: String { "unlock line rose at \(at): \(reason)" }
    }

    /// What the audit found: the rises nothing explains, and how many a resumed decision did.
    package struct Verdict {
        package var unexplained: [Unexplained]
        /// Rises explained by a decision a later start found open (a kill mid-unlock).
        package var explainedByResume: Int
    }

    /// One process's right to drive the line once for one decision, between `from` and `until`.
    private struct Token {
        var decision: UInt64
        var from: Instant
        var until: Instant
        var resumed: Bool
        var usedAt: Instant?
    }

    /// Judges the rises (any order) against the decisions in `entries`.
    package static func judge(_ rises: [Instant], entries: [JournalEntry], starts: [Start]) -> Verdict {
        let unlocks = entries.filter { $0.decision.operation == .unlock }
        // Before the first start noted (or with none), one process: the one that recorded.
        let lifetimes = [Start(at: Instant(nanoseconds: .min), foundOpen: nil)] + starts.sorted { $0.at < $1.at }
        var tokens: [Token] = []
        for entry in unlocks {
            let end = Self.end(of: entry)
            let recorded = Self.recorded(entry)
            for (index, life) in lifetimes.enumerated() {
                let lifeEnd = index + 1 < lifetimes.count ? lifetimes[index + 1].at : Instant(nanoseconds: .max)
                let recordedHere = life.at <= recorded && recorded < lifeEnd
                guard recordedHere || (life.at > recorded && life.foundOpen == entry.decision.id.rawValue) else { continue }
                tokens.append(Token(decision: entry.decision.id.rawValue, from: max(recorded, life.at),
                                    until: min(entry.decision.deadline, end, lifeEnd), resumed: !recordedHere))
            }
        }
        var unexplained: [Unexplained] = []
        for rise in rises.sorted() {
            // Of the tokens that cover the rise, the one that runs out first (earliest-deadline
            // matching of points to intervals: it explains as many rises as can be explained).
            let open = tokens.indices.filter { tokens[$0].usedAt == nil && tokens[$0].from <= rise && rise < tokens[$0].until }
            if let best = open.min(by: { tokens[$0].until < tokens[$1].until }) {
                tokens[best].usedAt = rise
            } else {
                unexplained.append(Unexplained(at: rise, reason: reason(rise, unlocks, tokens)))
            }
        }
        return Verdict(unexplained: unexplained, explainedByResume: tokens.filter { $0.resumed && $0.usedAt != nil }.count)
    }

    /// The latest unlock decision recorded before the rise, and what kept it from explaining it.
    private static func reason(_ rise: Instant, _ unlocks: [JournalEntry], _ tokens: [Token]) -> Reason {
        guard let entry = unlocks.last(where: { recorded($0) <= rise }) else { return .noDecision }
        let id = entry.decision.id.rawValue
        if rise >= entry.decision.deadline { return .pastWindow(decision: id, late: rise - entry.decision.deadline) }
        if let outcome = entry.outcome, rise >= end(of: entry) { return .ended(decision: id, outcome: outcome) }
        if let used = tokens.first(where: { $0.decision == id && $0.from <= rise && rise < $0.until })?.usedAt {
            return .spent(decision: id, onRiseAt: used)
        }
        return .notCarried(decision: id)
    }

    /// When the decision was recorded, on the recording process's monotonic clock: the
    /// journal keeps its instants there and the wall times of the same moments beside them.
    package static func recorded(_ entry: JournalEntry) -> Instant {
        entry.decision.decidedAt + .nanoseconds(entry.wall.recorded &- entry.wall.decided)
    }

    /// When the decision ended (still open: never), on the same clock.
    package static func end(of entry: JournalEntry) -> Instant {
        guard let completed = entry.completedWallNanos else { return Instant(nanoseconds: .max) }
        return recorded(entry) + .nanoseconds(completed &- entry.wall.recorded)
    }
}
