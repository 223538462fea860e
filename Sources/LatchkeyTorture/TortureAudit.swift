import LatchkeyDaemons
import LatchkeyLock
import LatchkeyStore
import LatchkeyTransport

/// What `latchkey-torture` holds the lock to, read from outside the lock process (its store, the
/// GPIO line it drives, what it announced): no decided state lost, journal and log consistent,
/// no unlock that was not decided (`UnlockRiseAudit`). Each rule in full: docs/TESTING.md,
/// "What the torture audit checks".
struct TortureAudit {
    /// Decision ids the lock announced; each was durable before it said so.
    var announced: Set<UInt64> = []
    /// Decisions found open at a kill, with the wall time of the last start that followed.
    private var recoveries: [UInt64: (entry: JournalEntry, restartWall: Int64)] = [:]
    private var verified: Set<UInt64> = []
    /// Every start of the lock process, with the decision it found open.
    private(set) var starts: [UnlockRiseAudit.Start] = []
    /// Every violation of the first two rules, once each, in words.
    private(set) var lostDecisions: [String] = []
    private var reported: Set<String> = []

    /// How long a start may take to reach reconciliation (process start, store, sensors):
    /// an unlock whose window ends later than this after the start must be resumed.
    static let startAllowance: Int64 = 2_000_000_000

    struct Disk {
        var entries: [JournalEntry]
        var events: [LoggedEvent]
        var open: JournalEntry? { entries.last { $0.outcome == nil } }
    }

    /// Reads the lock's store as a restarted lock would (the lock process may be running: WAL
    /// readers do not disturb it).
    static func read(lockState: String) throws -> Disk {
        let store = try AgentStore(directory: lockState, fileName: StateStores.lockFile)
        // Read-only audit: what was read stands; a failed close loses nothing.
        defer { try? store.close() }
        let journal = store.decisionJournal(monotonicNow: { .zero })
        return Disk(entries: try journal.entries(), events: try store.eventLog().read(limit: Int.max))
    }

    /// A start of the lock process, noted before it is spawned (so that every edge it drives
    /// comes after `at`, on CLOCK_MONOTONIC; `wall` on the journal's wall clock), with the
    /// decision the journal held open when the previous process died.
    mutating func noteStart(at: Instant, wall: Int64, open: JournalEntry?) {
        starts.append(UnlockRiseAudit.Start(at: at, foundOpen: open?.decision.id.rawValue))
        guard let open else { return }
        recoveries[open.decision.id.rawValue] = (open, wall)
    }

    mutating func check(_ disk: Disk, final: Bool = false) {
        let byID = Dictionary(disk.entries.map { ($0.decision.id.rawValue, $0) }, uniquingKeysWith: { a, _ in a })
        let oldest = disk.entries.first?.decision.id.rawValue ?? 0
        for id in announced where id >= oldest && byID[id] == nil {
            lost("decision #\(id) was announced but is not in the journal")
        }
        var closing: [UInt64: [LockEvent]] = [:]
        for logged in disk.events {
            guard let id = logged.event.decision?.rawValue else { continue }
            if case .lockOperationError(_, .journalFailed) = logged.event.kind { continue }  // never recorded
            closing[id, default: []].append(logged.event)
        }
        for entry in disk.entries {
            let id = entry.decision.id.rawValue
            let events = closing[id] ?? []
            guard let outcome = entry.outcome else {
                if !events.isEmpty { lost("decision #\(id) is open but the log reports its end") }
                continue
            }
            guard events.count == 1, let event = events.first else {
                lost("decision #\(id) completed (\(outcome)) with \(events.count) closing events in the log")
                continue
            }
            if !Self.matches(outcome, event.kind) { lost("decision #\(id) ended \(outcome) but the log says \(event)") }
        }
        for id in closing.keys where id >= oldest && byID[id] == nil {
            lost("the log reports decision #\(id), which the journal never held")
        }
        checkRecoveries(byID, closing, final: final)
    }

    private mutating func checkRecoveries(_ byID: [UInt64: JournalEntry], _ closing: [UInt64: [LockEvent]], final: Bool) {
        for (id, recovery) in recoveries where !verified.contains(id) {
            guard byID[id]?.outcome != nil, let event = closing[id]?.first else {
                if final { lost("decision #\(id), open at a kill, was never taken up") }
                continue
            }
            verified.insert(id)
            let record: LockOperationRecord, error: OperationError?
            switch event.kind {
            case .lockOperation(let r): record = r; error = nil
            case .lockOperationError(let r, let e): record = r; error = e
            default: continue
            }
            if !record.recovered { lost("decision #\(id), taken up at a start, was closed without the recovered mark") }
            let deadline = recovery.entry.wall.deadline
            switch recovery.entry.decision.operation {
            case .lock:
                if error == .interrupted { lost("lock decision #\(id) was abandoned instead of resumed") }
            case .unlock:
                if error == nil && recovery.restartWall > deadline {
                    lost("unlock decision #\(id) was carried out after its window")
                }
                if error == .interrupted && recovery.restartWall + Self.startAllowance < deadline {
                    lost("unlock decision #\(id) was abandoned inside its window")
                }
            }
        }
    }

    /// Judges the rises of the unlock line (CLOCK_MONOTONIC, any order) against the journal.
    func judgeRises(_ rises: [Instant], _ disk: Disk) -> UnlockRiseAudit.Verdict {
        UnlockRiseAudit.judge(rises, entries: disk.entries, starts: starts)
    }

    /// The rises of the unlock line that no decision explains.
    func unexplainedRises(_ rises: [Instant], _ disk: Disk) -> [UnlockRiseAudit.Unexplained] {
        judgeRises(rises, disk).unexplained
    }

    static func matches(_ outcome: DecisionOutcome, _ kind: LockEvent.Kind) -> Bool {
        switch (outcome, kind) {
        case (.succeeded, .lockOperation): true
        case (.jammed, .lockOperationError(_, .jammed)): true
        case (.abandoned, .lockOperationError(_, .interrupted)), (.abandoned, .lockOperationError(_, .doorOpen)): true
        case (.hardwareFault, .lockOperationError(_, .hardwareFault)): true
        default: false
        }
    }

    private mutating func lost(_ problem: String) {
        guard reported.insert(problem).inserted else { return }
        lostDecisions.append(problem)
    }
}
