import LatchkeySQLite
import LatchkeySecurity

// Issue 3 (command received → actuator line, p99 < 5 ms): the command's new counter and
// the decision it leads to are made durable in ONE transaction, one fsync, instead of two.
// The rules stay: the counter is durable no later than the decision (same commit), and a
// decision that fails to persist moves nothing (its transaction, counter included, rolls
// back; `LockController` does not drive without `record` returning).

extension StoredLockRecords {
    /// The lock's keys as the command verifier should see them: counters it stages ride on
    /// the next write of these records (`KeyStore.stageCounter`).
    public var commandKeys: StoredCommandKeys { StoredCommandKeys(records: self) }

    /// One transaction: the staged counter, if any, then `body`. The counter is cleared
    /// only once committed; a failed write leaves it staged for `commitStagedCounter`.
    func writeCarryingCounter<T>(_ body: (Database) throws -> T) throws -> T {
        guard let staged = stagedCounter else { return try store.write(body) }
        let keys = keys
        let result = try store.write { db in
            try keys.recordCounter(staged.counter, keyID: staged.keyID, in: db)
            return try body(db)
        }
        stagedCounter = nil
        return result
    }

    /// Commits a staged counter alone. It is dropped even when the commit fails: nothing
    /// durable refers to it (it would have ridden on that write), and the command it came
    /// with is answered `storageFailure`.
    func commitStagedCounter() throws {
        guard let staged = stagedCounter else { return }
        stagedCounter = nil
        try keys.recordCounter(staged.counter, keyID: staged.keyID)
    }
}

/// A `StoredKeyStore` whose counter writes are staged in the lock's records
/// (`StoredLockRecords.commandKeys`). Keys are still read from the file at every use.
public final class StoredCommandKeys: KeyStore {
    private let records: StoredLockRecords

    init(records: StoredLockRecords) { self.records = records }

    public func key(id: UInt32) -> PhoneKey? { records.keys.key(id: id) }

    /// The durable counter, or the staged one when it is higher.
    public func lastCounter(keyID: UInt32) -> UInt64 {
        let durable = records.keys.lastCounter(keyID: keyID)
        guard let staged = records.stagedCounter, staged.keyID == keyID else { return durable }
        return max(durable, staged.counter)
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
