import LatchkeyLock
import LatchkeyStore
import LatchkeyTorture
import LatchkeyTransport

/// One broken promise, with the step it was found at (the seed is the run's).
public struct Violation: CustomStringConvertible, Sendable {
    public enum Rule: String, Sendable, CaseIterable {
        case unexplainedRise = "unlock line rose without a valid decision"
        case decisionLost = "decision lost"
        case decisionTwice = "decision carried out twice"
        case revokedKeySucceeded = "revoked key succeeded"
        case relinkTooSlow = "phone did not re-link in time"
        case growth = "growth past the bound"
        case brokerOrder = "broker events out of order"
        case intruderSucceeded = "a stranger's or a relay's command was accepted"
        case brokerGap = "events missing on the broker that the log's retention does not explain"
        case retention = "the audit log holds more than its retention"
        case counterReused = "a phone sent a command counter it had used before"
    }
    public var rule: Rule
    public var step: Int
    public var at: Instant
    public var detail: String
    public var description: String { "step \(step) at \(HouseholdClock.format(at)): \(rule.rawValue): \(detail)" }
}

/// The invariants, checked after every step from what the world reports to it: rises of the
/// unlock line, the lock's journal, what each caller was told, the keys revoked, the phone's
/// links, the sizes sampled, the broker's events.
final class HouseholdJudge {
    /// A phone is back in range and both agents are up: linked and ready within this.
    static let relinkBound = Duration.seconds(30)
    /// Growth from the second sample to the last, at most: the lock's store files (the
    /// journal and the log keep 10,000 rows each, so they stop growing) and the bytes the
    /// process has allocated and not freed (`ProcessMemory.allocatedBytes`).
    static let storeGrowthBound: Int64 = 2 << 20
    static let heapGrowthBound: Int64 = 16 << 20

    private(set) var violations: [Violation] = []
    var step = 0

    // The edge audit's inputs, kept for a sliding window (a decision's window is seconds).
    private var rises: [Instant] = []
    private var unjudgedRises: [Instant] = []
    private var starts: [UnlockRiseAudit.Start] = []
    private var entries: [UInt64: JournalEntry] = [:]
    private var highestEntry: UInt64 = 0
    /// Decisions that drove the line or that a caller was told about: they must outlive any crash.
    private var mustSurvive: Set<UInt64> = []
    private var explainedBy: [UInt64: Instant] = [:]
    /// Keys revoked, and when (the lock's monotonic clock).
    private(set) var revoked: [UInt32: Instant] = [:]
    /// Decisions announced since the last check (`lock.command_accepted`, the bridge's result).
    private var announced: Set<UInt64> = []
    /// When the owner's phone came back, and since when it could have linked.
    private var awaitingRelinkSince: Instant?
    private(set) var relinkTimes: [Duration] = []
    /// Until when the owner's phone may still be backing off from a store that refused
    /// writes: its disk came back, and the phone finds out at its back-off's next step
    /// (`ConnectionRequest`), at most its longest step later. The re-link's clock starts then.
    private var backingOffUntil: Instant?
    /// Re-links that waited for such a back-off, measured as `relinkTimes` (from the return, or
    /// the clock's last restart); judged against the bound from the back-off's end.
    private(set) var relinkTimesAfterBackoff: [Duration] = []
    private var lastBrokerSequence: UInt64 = 0
    private var bridgeRestartedSinceLast = false
    private(set) var brokerEvents = 0, brokerDuplicates = 0, brokerGaps = 0, brokerGapsExplained = 0
    private(set) var logCountMax = 0
    private(set) var samples: [(at: Instant, store: Int64, heap: Int64)] = []
    private(set) var risesSeen = 0
    private var relayWindows: [(key: UInt32, start: Instant, end: Instant?)] = []
    private var relayDecisionsJudged: Set<UInt64> = []
    /// The highest command counter each key's phone has sent, across its restarts.
    private var phoneCounters: [UInt32: UInt64] = [:]
    /// Keys whose phone restarted and has not sent a command since.
    private var phoneRestarted: Set<UInt32> = []
    /// Commands a phone sent as its first after a restart (each one's counter judged).
    private(set) var firstCommandsAfterRestart = 0

    func fail(_ rule: Violation.Rule, _ at: Instant, _ detail: String) {
        violations.append(Violation(rule: rule, step: step, at: at, detail: detail))
    }

    // MARK: What the world reports

    func rise(at: Instant) { unjudgedRises.append(at); risesSeen += 1 }
    func lockStarted(at: Instant, foundOpen: UInt64?) { starts.append(.init(at: at, foundOpen: foundOpen)) }
    func revoke(_ key: UInt32, at: Instant) { revoked[key] = at }
    func phoneAnswered(key: UInt32, operation: LockOperationType, ok: Bool, sent: Instant, at: Instant) {
        guard ok else { return }
        if let when = revoked[key], sent > when {
            fail(.revokedKeySucceeded, at, "key \(key)'s \(operation) was answered ok after its revocation")
        }
    }
    /// A decision the lock announced (`lock.command_accepted`) or named to the bridge
    /// ("accepted decision=N"): it is on disk, and stays there whatever happens next.
    func announced(decision: UInt64, key: UInt32?, at: Instant) {
        announced.insert(decision)
        mustSurvive.insert(decision)
        if let key, let when = revoked[key], at > when {
            fail(.revokedKeySucceeded, at, "the lock accepted key \(key)'s command (decision #\(decision)) after its revocation")
        }
    }

    func phoneReturned(at: Instant) { awaitingRelinkSince = at }
    func phoneLeft() { awaitingRelinkSince = nil }
    /// A start, a power-on or a dropped link: the re-link's clock starts again.
    func relinkClockRestarts(at: Instant) { if awaitingRelinkSince != nil { awaitingRelinkSince = at } }
    /// The owner's phone's disk takes writes again: the phone may wait up to `longestStep`.
    func phoneStoreBack(at: Instant, longestStep: Duration) { backingOffUntil = at + longestStep }
    func phoneReady(at: Instant) {
        if let since = awaitingRelinkSince {
            if let until = backingOffUntil, since < until { relinkTimesAfterBackoff.append(at - since) }
            else { relinkTimes.append(at - since) }
        }
        awaitingRelinkSince = nil
    }

    /// A stranger's write to the control characteristic was answered: accepted is a violation
    /// (it has no key; what it replays was sealed for a challenge long spent).
    func strangerAnswered(accepted: Bool, what: String, at: Instant) {
        if accepted { fail(.intruderSucceeded, at, "the lock accepted a stranger's \(what)") }
    }

    /// A relay carries the owner's phone's traffic, the phone far away: no unlock decision for
    /// its key while it lasts (an arrival through a slow relay is refused; nothing else is asked).
    func relayStarted(key: UInt32, at: Instant) { relayWindows.append((key, at, nil)) }
    func relayEnded(at: Instant) {
        if let last = relayWindows.indices.last, relayWindows[last].end == nil { relayWindows[last].end = at }
    }

    func bridgeRestarted() { bridgeRestartedSinceLast = true }

    /// A phone's process started (again), from its store on its own disk.
    func phoneStarted(key: UInt32) { phoneRestarted.insert(key) }

    /// A phone sent a command (`phone.command_sent`): its counter must be above every one it
    /// sent before, whatever its disk lost — a counter used again is a command sent twice (the
    /// lock refuses it as a replay, and the caller's command is lost).
    func phoneSent(key: UInt32, counter: UInt64, at: Instant) {
        if phoneRestarted.remove(key) != nil { firstCommandsAfterRestart += 1 }
        if let last = phoneCounters[key], counter <= last {
            fail(.counterReused, at, "key \(key)'s phone sent counter \(counter) after counter \(last)")
        }
        phoneCounters[key] = max(counter, phoneCounters[key] ?? 0)
    }
    /// `oldestInLog`: the oldest sequence the running lock's audit log holds (.some(nil) when
    /// it holds none; .none when the lock is down: the gap is then counted, not judged).
    func brokerEvent(sequence: UInt64, at: Instant, oldestInLog: () -> UInt64?? = { .none }) {
        brokerEvents += 1
        if sequence <= lastBrokerSequence {
            if bridgeRestartedSinceLast { brokerDuplicates += 1; return }
            fail(.brokerOrder, at, "event \(sequence) after event \(lastBrokerSequence), with no bridge restart between")
            return
        }
        if sequence > lastBrokerSequence + 1 && lastBrokerSequence > 0 {
            brokerGaps += 1
            // Explained only when retention dropped every missing event: the log's oldest is
            // the one just received, or later.
            switch oldestInLog() {
            case .some(.some(let oldest)) where oldest >= sequence: brokerGapsExplained += 1
            case .some(let oldest):
                fail(.brokerGap, at, "events \(lastBrokerSequence + 1)-\(sequence - 1) skipped; the log's oldest is "
                     + (oldest.map { "\($0)" } ?? "none (empty)") + ": retention did not drop them")
            case .none: break
            }
        }
        lastBrokerSequence = sequence
        bridgeRestartedSinceLast = false
    }

    func sample(at: Instant, store: Int64, heap: Int64) { samples.append((at, store, heap)) }

    /// The running lock's audit log: at most its retention, after every append's trim.
    func logSize(_ count: Int, retention: Int, at: Instant) {
        logCountMax = max(logCountMax, count)
        if count > retention { fail(.retention, at, "the log holds \(count) events (retention \(retention))") }
    }

    // MARK: Checks

    /// After every step. `journal`: the running lock's (nil while it is down: its checks wait).
    /// `relinkPossible`: both agents up and the phone in range.
    func check(now: Instant, journal: StoredDecisionJournal?, relinkPossible: Bool) {
        if let since = awaitingRelinkSince, relinkPossible, now - max(since, backingOffUntil ?? since) > Self.relinkBound {
            fail(.relinkTooSlow, now, "back in range since \(HouseholdClock.format(since)), not ready after \(now - since)"
                 + (backingOffUntil.map { $0 > since ? " (its back-off over by \(HouseholdClock.format($0)))" : "" } ?? ""))
            awaitingRelinkSince = nil
        }
        guard let journal else { return }
        readJournal(journal, now: now)
        judgeRises(now: now)
        checkAnnounced(journal, now: now)
        // A decision is a success of its key: none may be recorded for a key after its revocation.
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) {
            guard let key = entry.decision.who?.rawValue, let when = revoked[key],
                  UnlockRiseAudit.recorded(entry) > when else { continue }
            fail(.revokedKeySucceeded, now, "decision #\(id) (\(entry.decision.operation)) for key \(key), "
                 + "revoked at \(HouseholdClock.format(when))")
            revoked[key] = Instant(nanoseconds: .max)  // said once
        }
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) where !relayDecisionsJudged.contains(id) {
            let recorded = UnlockRiseAudit.recorded(entry)
            // An unlock is the success; the relock that follows an arrival is the lock's own.
            guard entry.decision.operation == .unlock, let key = entry.decision.who?.rawValue,
                  relayWindows.contains(where: { $0.key == key && recorded >= $0.start && recorded <= ($0.end ?? now) })
            else { continue }
            relayDecisionsJudged.insert(id)
            fail(.intruderSucceeded, now, "decision #\(id) (\(entry.decision.operation)) for key \(key) while its phone "
                 + "was far away, reachable only through the relay")
        }
        relayWindows.removeAll { $0.end.map { now - $0 > .seconds(1200) } ?? false }
    }

    /// After a lock start: every decision that must survive is still in the journal (unless
    /// the journal's retention has dropped it).
    func checkSurvivors(journal: StoredDecisionJournal, now: Instant) {
        guard let last = read("its highest decision id", now, { try journal.lastDecisionID() }) else { return }
        guard let highest = last?.rawValue else {
            if !mustSurvive.isEmpty { fail(.decisionLost, now, "the journal is empty after a restart; \(mustSurvive.count) decisions were due") }
            return
        }
        let floor = highest > UInt64(journal.retention) ? highest - UInt64(journal.retention) : 0
        for id in mustSurvive.sorted() where id > floor && !holds(journal, id, now) {
            fail(.decisionLost, now, "decision #\(id) is not in the journal after the restart (highest #\(highest))")
        }
        mustSurvive = mustSurvive.filter { $0 > floor }
    }

    /// The growth between the second sample and the last.
    func checkGrowth(now: Instant) {
        guard samples.count >= 3 else { return }
        let first = samples[1], last = samples[samples.count - 1]
        if last.store - first.store > Self.storeGrowthBound {
            fail(.growth, now, "the store grew \(last.store - first.store) bytes (bound \(Self.storeGrowthBound))")
        }
        if last.heap - first.heap > Self.heapGrowthBound {
            fail(.growth, now, "the bytes allocated and not freed grew \(last.heap - first.heap) (bound \(Self.heapGrowthBound))")
        }
    }

    private func readJournal(_ journal: StoredDecisionJournal, now: Instant) {
        // Open and recent decisions change (their outcome); read from a little before the last seen.
        let from = highestEntry > 64 ? highestEntry - 64 : 0
        guard let fresh = read("its recent decisions", now, { try journal.entries(after: from == 0 ? nil : DecisionID(from)) })
        else { return }
        for e in fresh {
            entries[e.decision.id.rawValue] = e
            highestEntry = max(highestEntry, e.decision.id.rawValue)
        }
        // Keep ten minutes of decisions: a decision's window is seconds.
        let horizon = now - .seconds(600)
        entries = entries.filter { UnlockRiseAudit.recorded($0.value) >= horizon || $0.key + 64 > highestEntry }
    }

    private func judgeRises(now: Instant) {
        guard !unjudgedRises.isEmpty else { return }
        let first = unjudgedRises.min()!
        let horizon = first - .seconds(120)
        let windowRises = rises.filter { $0 >= horizon } + unjudgedRises
        let windowStarts = (starts.last(where: { $0.at < horizon }).map { [$0] } ?? []) + starts.filter { $0.at >= horizon }
        let windowEntries = entries.values.filter { UnlockRiseAudit.recorded($0) >= horizon - .seconds(120) }
            .sorted { $0.decision.id.rawValue < $1.decision.id.rawValue }
        let verdict = UnlockRiseAudit.judge(windowRises, entries: windowEntries, starts: windowStarts)
        let fresh = Set(unjudgedRises)
        for u in verdict.unexplained where fresh.contains(u.at) {
            if case .spent = u.reason { fail(.decisionTwice, u.at, u.description) } else { fail(.unexplainedRise, u.at, u.description) }
        }
        // The decision each rise carried out must outlive any crash that follows.
        for rise in unjudgedRises {
            if let e = windowEntries.last(where: { $0.decision.operation == .unlock && UnlockRiseAudit.recorded($0) <= rise
                                                  && rise < $0.decision.deadline }) {
                mustSurvive.insert(e.decision.id.rawValue)
                explainedBy[e.decision.id.rawValue] = rise
            }
        }
        rises = (rises + unjudgedRises).filter { $0 >= now - .seconds(600) }
        starts = Array(starts.suffix(16))
        unjudgedRises = []
        if explainedBy.count > 256 { explainedBy = explainedBy.filter { $0.value >= now - .seconds(600) } }
    }

    /// Every decision announced (or named to the bridge) since the last check is in the journal.
    private func checkAnnounced(_ journal: StoredDecisionJournal, now: Instant) {
        for id in announced.sorted() where entries[id] == nil && !holds(journal, id, now) {
            fail(.decisionLost, now, "decision #\(id) was announced but is not in the journal")
        }
        announced = []
    }

    /// Whether the journal holds decision `id`. A read that fails is a violation of its own
    /// (below), so it answers true here rather than report the decision lost too.
    private func holds(_ journal: StoredDecisionJournal, _ id: UInt64, _ now: Instant) -> Bool {
        guard let first = read("decision #\(id)", now, {
            try journal.entries(after: id > 1 ? DecisionID(id - 1) : nil, limit: 1).first
        }) else { return true }
        return first?.decision.id.rawValue == id
    }

    /// `body`, a read of the lock's journal; when it throws, the judge cannot check what it
    /// needed: that is a violation (the store must stay readable through every fault played),
    /// never a check quietly skipped.
    private func read<T>(_ what: String, _ now: Instant, _ body: () throws -> T) -> T? {
        do { return try body() } catch {
            fail(.decisionLost, now, "the lock's journal could not be read (\(what)): \(error)")
            return nil
        }
    }

    // MARK: Planted violations (the judge's self-test)

    /// A decision a caller was told about that the journal never held.
    func plantMissingDecision() { mustSurvive.insert(highestEntry + 1_000_000) }
}

/// Simulated time as day and time of day: the household starts at midnight of day 0.
public enum HouseholdClock {
    public static func format(_ t: Instant) -> String {
        let ms = t.nanoseconds / 1_000_000
        let day = ms / 86_400_000, rest = ms % 86_400_000
        let h = rest / 3_600_000, m = rest / 60_000 % 60, s = rest / 1000 % 60
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "day \(day) \(two(h)):\(two(m)):\(two(s)).\(String(rest % 1000 + 1000).dropFirst())"
    }
}
