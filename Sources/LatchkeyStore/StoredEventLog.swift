import FoundationEssentials
import LatchkeySQLite
import LatchkeyLock

/// One entry of the stored audit log.
public struct LoggedEvent: Hashable, Sendable {
    /// Increases by one per append and is never reused, even after retention removed
    /// older entries (SQLite AUTOINCREMENT), so a reader can resume from the last one it saw.
    public var sequence: UInt64
    /// When it was appended, nanoseconds since the Unix epoch: the event's own `time` is on
    /// the monotonic clock of the process that emitted it, which a reader cannot place.
    public var wallNanos: Int64
    public var event: LockEvent
}

/// The lock's audit log (docs/LOCK-RULES.md: who unlocked, when and how; failed attempts;
/// jams): `LockEvent`s in their binary form (`LockEvent+Binary.swift`), one row each,
/// durable when `append` returns. Keeps the newest `retention` entries.
public final class StoredEventLog {
    /// 10,000 entries: at 29 bytes per event well under a megabyte, months of a household
    /// door's traffic, and the size the start-up benchmark uses.
    public static let defaultRetention = 10_000

    private let store: AgentStore
    public let retention: Int

    init(store: AgentStore, retention: Int) {
        precondition(retention > 0, "a log keeps at least one event")
        self.store = store
        self.retention = retention
    }

    /// Appends `event` and trims the log to `retention` entries, in one transaction.
    /// Returns the entry's sequence number.
    @discardableResult
    public func append(_ event: LockEvent) throws(StoreError) -> UInt64 {
        try store.write { db in try append(event, in: db) }
    }

    /// Appends `events` in one transaction (bulk imports, test and benchmark fixtures).
    public func append(contentsOf events: [LockEvent]) throws(StoreError) {
        try store.write { db in for event in events { _ = try append(event, in: db) } }
    }

    /// The append inside a transaction of the caller's.
    func append(_ event: LockEvent, in db: Database) throws -> UInt64 {
        try db.execute(sql: "INSERT INTO event (wallNanos, bytes) VALUES (?, ?)",
                       arguments: [store.wallClock.nanosecondsSinceEpoch(), Data(event.encoded)])
        let sequence = db.lastInsertedRowID
        try db.execute(sql: "DELETE FROM event WHERE seq <= ?", arguments: [sequence - Int64(retention)])
        return UInt64(sequence)
    }

    /// Up to `limit` entries with `sequence >= from`, oldest first.
    public func read(from sequence: UInt64 = 0, limit: Int) throws(StoreError) -> [LoggedEvent] {
        try fetch(sql: "SELECT seq, wallNanos, bytes FROM event WHERE seq >= ? ORDER BY seq LIMIT ?",
                  arguments: [Int64(clamping: sequence), max(0, limit)])
    }

    /// The newest `count` entries, oldest first (what a BLE log read or `latchkey log` shows).
    public func tail(_ count: Int) throws(StoreError) -> [LoggedEvent] {
        try fetch(sql: "SELECT seq, wallNanos, bytes FROM event ORDER BY seq DESC LIMIT ?",
                  arguments: [max(0, count)]).reversed()
    }

    /// Up to `limit` entries appended at or after `sinceWallNanos` (all when nil), newest
    /// first: what `latchkey log` shows.
    public func newest(limit: Int, sinceWallNanos: Int64? = nil) throws(StoreError) -> [LoggedEvent] {
        try fetch(sql: "SELECT seq, wallNanos, bytes FROM event WHERE wallNanos >= ? ORDER BY seq DESC LIMIT ?",
                  arguments: [sinceWallNanos ?? Int64.min, max(0, limit)])
    }

    public func count() throws(StoreError) -> Int {
        try store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM event") ?? 0 }
    }

    /// The sequence number of the newest entry, nil while the log is empty.
    public func lastSequence() throws(StoreError) -> UInt64? {
        try store.read { db in try Int64.fetchOne(db, sql: "SELECT max(seq) FROM event").map(UInt64.init) }
    }

    private func fetch(sql: String, arguments: StatementArguments) throws(StoreError) -> [LoggedEvent] {
        let path = store.path
        return try store.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                let sequence: Int64 = try row.decode(forColumn: "seq")
                let bytes: Data = try row.decode(forColumn: "bytes")
                do {
                    return LoggedEvent(sequence: UInt64(sequence), wallNanos: try row.decode(forColumn: "wallNanos"),
                                       event: try LockEvent(decoding: bytes))
                } catch {
                    throw StoreError.undecodable(path: path, what: "event #\(sequence): \(error)")
                }
            }
        }
    }
}

extension AgentStore {
    /// `count` copies of one encoded event in one transaction, with no wall-clock time: how
    /// `latchkey-bench` fills a log before it times a reopen (the filling is not measured).
    package func fillEventLog(with encoded: [UInt8], count: Int) throws(StoreError) {
        try write { db in
            for _ in 0..<count {
                try db.execute(sql: "INSERT INTO event (wallNanos, bytes) VALUES (0, ?)", arguments: [Data(encoded)])
            }
        }
    }
}
