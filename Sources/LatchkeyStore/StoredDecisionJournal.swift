import LatchkeySQLite
import LatchkeyLock
import LatchkeyTransport

/// The lock's decision journal on disk: a decision is committed (WAL, synchronous=FULL,
/// fsync'ed) before `record` returns, so the actuator never moves for a decision a crash could
/// forget; times per `DecisionDeadlineRule`. Ids strictly increase across restarts and
/// retention (`lastDecisionID`; else `record` throws and the lock does not move); a decision
/// completes once; completed ones more than `retention` ids old are deleted. `record` writes as
/// little as it can before the motor: the row and its open-decisions index entry.
public final class StoredDecisionJournal: DecisionJournal {
    /// As many decisions as the event log keeps events (10,000: see `StoredEventLog`).
    public static let defaultRetention = 10_000
    private static let highestIDKey = "highestDecisionID"

    private let store: AgentStore
    private let monotonicNow: () -> Instant
    public let retention: Int

    init(store: AgentStore, monotonicNow: @escaping () -> Instant, retention: Int) {
        precondition(retention > 0, "a journal keeps at least one decision")
        self.store = store
        self.monotonicNow = monotonicNow
        self.retention = retention
    }

    public func record(_ decision: LockDecision) throws(StoreError) {
        try store.writingDecision(decision.id) { () throws(StoreError) in
            try store.write { db in try record(decision, in: db) }
        }
    }

    /// The record inside a transaction of the caller's (`StoredLockRecords` puts the counter
    /// of the command behind the decision in the same one).
    func record(_ decision: LockDecision, in db: Database) throws {
        let wall = DecisionDeadlineRule.wallTimes(of: decision, wallNow: store.wallClock.nanosecondsSinceEpoch(),
                                                  monotonicNow: monotonicNow())
        if let highest = try Self.highestID(db), decision.id <= highest {
            throw StoreError.rejected(path: store.path, reason: "\(decision.id) is not above \(highest), the highest recorded")
        }
        try db.execute(sql: """
            INSERT INTO decision (id, operation, source, who, decidedAtNanos, deadlineNanos, relockAfterNanos,
                                  recordedWallNanos, decidedWallNanos, deadlineWallNanos)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [Int64(bitPattern: decision.id.rawValue), decision.operation.rawValue,
                             decision.source.rawValue, decision.who.map { Int64($0.rawValue) },
                             decision.decidedAt.nanoseconds, decision.deadline.nanoseconds,
                             decision.relockAfter?.nanoseconds, wall.recorded, wall.decided, wall.deadline])
    }

    public func complete(_ id: DecisionID, outcome: DecisionOutcome) throws(StoreError) {
        try store.write { db in try complete(id, outcome: outcome, in: db) }
    }

    /// The completion inside a transaction of the caller's (`StoredLockRecords` puts the
    /// event that reports it in the same one).
    func complete(_ id: DecisionID, outcome: DecisionOutcome, in db: Database) throws {
        try db.execute(sql: """
            UPDATE decision SET outcome = ?, completedWallNanos = ? WHERE id = ? AND outcome IS NULL
            """, arguments: [outcome.rawValue, store.wallClock.nanosecondsSinceEpoch(), Int64(bitPattern: id.rawValue)])
        guard db.changesCount == 1 else {
            throw StoreError.rejected(path: store.path, reason: "\(id) is not an open decision")
        }
        // The highest id outlives the rows retention deletes: kept here, off the motor's path.
        if let highest = try Self.highestID(db) {
            try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)",
                           arguments: [Self.highestIDKey, Int64(bitPattern: highest.rawValue)])
        }
        try db.execute(sql: """
            DELETE FROM decision WHERE outcome IS NOT NULL
              AND id <= (SELECT max(id) FROM decision) - ?
            """, arguments: [retention])
    }

    /// The latest decision recorded and never completed — what a restarted lock passes to
    /// `LockController.start(recovered:)` — with its instants on this process's monotonic
    /// clock (`DecisionDeadlineRule`). An unlock past its window comes back with its
    /// deadline at or before `monotonicNow()`, so the lock resolves to locked. So does an
    /// interrupted unlock in a store open read-only (see below).
    public func interrupted() throws(StoreError) -> LockDecision? {
        let path = store.path
        let found: (LockDecision, DecisionDeadlineRule.WallTimes)? = try store.read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT * FROM decision WHERE outcome IS NULL ORDER BY id DESC LIMIT 1
                """) else { return nil }
            return try Self.decode(row, path: path)
        }
        guard let (decision, wall) = found else { return nil }
        let now = monotonicNow()
        var rebased = DecisionDeadlineRule.rebase(decision, wall: wall, wallNow: store.wallClock.nanosecondsSinceEpoch(),
                                                  monotonicNow: now)
        // A lock on a read-only store refuses unlocks (it can record neither one nor its end),
        // so it resumes none either. On a card that went read-only, an open unlock may also be
        // a commit the card refused — its caller told so, the motor never run — read back from
        // the kernel's page cache (`AgentStore.supersedeFailedCommit` cannot write there).
        // The same for an unlock whose commit the card refused and the ledger remembers (a card
        // made writable again without a reboot, and a lock restarted inside the unlock's window).
        if rebased.operation == .unlock, rebased.deadline > now,
           store.isReadOnly || store.refusedCommits?.contains(rebased.id) == true {
            rebased.deadline = now
        }
        return rebased
    }

    /// The highest id ever recorded (kept even when its row is gone), so that a restarted
    /// lock continues after it: pass `lastDecisionID + 1` as `firstDecisionID`.
    public func lastDecisionID() throws(StoreError) -> DecisionID? {
        try store.read { db in try Self.highestID(db) }
    }

    /// How `id` ended; nil while it is open (or once retention removed it).
    public func outcome(of id: DecisionID) throws(StoreError) -> DecisionOutcome? {
        let raw = try store.read { db in
            try UInt8.fetchOne(db, sql: "SELECT outcome FROM decision WHERE id = ?",
                               arguments: [Int64(bitPattern: id.rawValue)])
        }
        return raw.flatMap(DecisionOutcome.init(rawValue:))
    }

    /// Up to `limit` decisions with an id above `after`, oldest first, as recorded (their
    /// instants on the recording process's clock) with their wall times and outcomes: what an
    /// auditor compares with the event log and the actuator's history (`latchkey-torture`).
    public func entries(after: DecisionID? = nil, limit: Int = .max) throws(StoreError) -> [JournalEntry] {
        let path = store.path
        return try store.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM decision WHERE id > ? ORDER BY id LIMIT ?",
                             arguments: [Int64(bitPattern: after?.rawValue ?? 0), Int64(clamping: limit)]).map { row in
                let (decision, wall) = try Self.decode(row, path: path)
                let outcome: UInt8? = try row.decode(forColumn: "outcome")
                return JournalEntry(decision: decision, wall: wall, outcome: outcome.flatMap(DecisionOutcome.init(rawValue:)),
                                    completedWallNanos: try row.decode(forColumn: "completedWallNanos"))
            }
        }
    }

    /// Decisions held (open and completed).
    public func count() throws(StoreError) -> Int {
        try store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM decision") ?? 0 }
    }

    /// The newest row's id, or meta's when it is higher (the rows retention deleted, or a
    /// store whose rows are all gone). Ids are stored as their Int64 bit pattern and ordered as
    /// such: a lock counts its decisions from 1 and never reaches 2^63.
    private static func highestID(_ db: Database) throws -> DecisionID? {
        let kept = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE name = ?", arguments: [highestIDKey])
        let newest = try Int64.fetchOne(db, sql: "SELECT max(id) FROM decision")
        return [kept, newest].compactMap { $0.map { UInt64(bitPattern: $0) } }.max().map { DecisionID($0) }
    }

    private static func decode(_ row: Row, path: String) throws -> (LockDecision, DecisionDeadlineRule.WallTimes) {
        let id = DecisionID(UInt64(bitPattern: try row.decode(forColumn: "id")))
        let who: Int64? = try row.decode(forColumn: "who")
        let relockAfter: Int64? = try row.decode(forColumn: "relockAfterNanos")
        guard let operation = LockOperationType(rawValue: try row.decode(forColumn: "operation")),
              let source = OperationSource(rawValue: try row.decode(forColumn: "source")),
              who.map({ UInt32(exactly: $0) != nil }) ?? true else {
            throw StoreError.undecodable(path: path, what: "\(id)")
        }
        let decision = LockDecision(
            id: id, operation: operation, source: source, who: who.map { KeyID(UInt32($0)) },
            decidedAt: Instant(nanoseconds: try row.decode(forColumn: "decidedAtNanos")),
            deadline: Instant(nanoseconds: try row.decode(forColumn: "deadlineNanos")),
            relockAfter: relockAfter.map { .nanoseconds($0) })
        let wall = DecisionDeadlineRule.WallTimes(recorded: try row.decode(forColumn: "recordedWallNanos"),
                                                  decided: try row.decode(forColumn: "decidedWallNanos"),
                                                  deadline: try row.decode(forColumn: "deadlineWallNanos"))
        return (decision, wall)
    }
}

/// One decision as the journal holds it.
public struct JournalEntry: Hashable, Sendable {
    /// As recorded: its instants are on the monotonic clock of the process that recorded it.
    public var decision: LockDecision
    /// When it was recorded, decided and due, on the wall clock (nanoseconds since the epoch).
    public var wall: DecisionDeadlineRule.WallTimes
    /// nil while open.
    public var outcome: DecisionOutcome?
    public var completedWallNanos: Int64?
}
