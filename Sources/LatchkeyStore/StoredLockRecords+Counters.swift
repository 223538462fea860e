import LatchkeyLock
import LatchkeySQLite
import LatchkeySecurity

// The lock's path target (command received → actuator line, p99 < 5 ms): the command's new counter and
// the decision it leads to are made durable in ONE transaction, one fsync, instead of two.
// The rules stay: the counter is durable no later than the decision (same commit), and a
// decision that fails to persist moves nothing (its transaction, counter included, rolls
// back; `LockController` does not drive without `record` returning).

extension StoredLockRecords {
    /// The lock's keys as the command verifier should see them: counters it stages ride on
    /// the next write of these records (`KeyStore.stageCounter`).
    public var commandKeys: StoredCommandKeys { StoredCommandKeys(records: self) }

    /// One transaction: the counters held in memory, the staged one and `counter` (a
    /// decision's: `record(_:committing:)`), if any, then `body`. They are cleared only once
    /// committed; a failed write leaves them where they were (the staged one for
    /// `commitStagedCounter`).
    func writeCarryingCounter<T>(_ counter: KeyCounter? = nil, _ body: (Database) throws -> T) throws -> T {
        let staged = stagedCounter, held = heldCounters
        guard counter != nil || staged != nil || !held.isEmpty else { return try store.write(body) }
        let keys = keys
        let result = try store.write { db in
            for (keyID, value) in held { try keys.raiseCounter(to: value, keyID: keyID, in: db) }
            if let staged { try keys.recordCounter(staged.counter, keyID: staged.keyID, in: db) }
            // A decision's counter: the staged one just written, unless an earlier write carried
            // it; either way on disk when this transaction commits, never lowered.
            if let counter { try keys.raiseCounter(to: counter.counter, keyID: counter.keyID, in: db) }
            return try body(db)
        }
        stagedCounter = nil
        heldCounters = [:]
        return result
    }

    /// Commits a staged counter (with any held ones). When the store refuses it, it is held
    /// in memory instead (`heldCounters`): still counted by `lastCounter`, so the running
    /// agent never takes it again, and written with the next write that goes through (or
    /// `writeHeld`, which the journal's backlog runs). Whether the command it came with is
    /// answered `storageFailure` is the agent's call: a lock has moved anyway.
    func commitStagedCounter() throws {
        guard let staged = stagedCounter else { return }
        do { try writeCarryingCounter { _ in } } catch {
            stagedCounter = nil
            heldCounters[staged.keyID] = max(heldCounters[staged.keyID] ?? 0, staged.counter)
            throw error
        }
    }

    /// Writes the counters held in memory, if any (`DecisionJournal.writeHeld`).
    public func writeHeld() throws {
        guard !heldCounters.isEmpty else { return }
        try writeCarryingCounter { _ in }
    }

    /// Counters the store has not taken yet (held in memory after a refused write).
    public var unwrittenCounters: Int { heldCounters.count }
}

/// A `StoredKeyStore` whose counter writes are staged in the lock's records
/// (`StoredLockRecords.commandKeys`). Keys are still read from the file at every use.
public final class StoredCommandKeys: KeyStore {
    private let records: StoredLockRecords

    init(records: StoredLockRecords) { self.records = records }

    public func key(id: UInt32) -> PhoneKey? { records.keys.key(id: id) }
    public func lookUp(id: UInt32) -> Result<PhoneKey?, any Error> { records.keys.lookUp(id: id) }

    /// The highest of the durable counter, the staged one and a held one.
    public func lastCounter(keyID: UInt32) -> UInt64 {
        let durable = records.keys.lastCounter(keyID: keyID)
        let staged = records.stagedCounter.flatMap { $0.keyID == keyID ? $0.counter : nil } ?? 0
        return max(durable, staged, records.heldCounters[keyID] ?? 0)
    }

    public func recordCounter(_ counter: UInt64, keyID: UInt32) throws {
        try records.commitStagedCounter()
        try records.keys.recordCounter(counter, keyID: keyID)
    }

    /// One command at a time: a counter still staged from an earlier one is committed first.
    public func stageCounter(_ counter: UInt64, keyID: UInt32) throws {
        try records.commitStagedCounter()
        records.stagedCounter = (keyID, counter)
    }

    public func commitStagedCounter() throws { try records.commitStagedCounter() }

    /// The last error a non-throwing read swallowed.
    public var lastReadError: StoreError? { records.keys.lastReadError }
}
