#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import LatchkeyLock
import LatchkeySecurity
import LatchkeyStore
import LatchkeyTransport

/// Opens the agents' SQLite stores in their state directories.
public enum StateStores {
    public static let lockFile = "lock.db"
    public static let phoneFile = "phone.db"

    /// The lock's store. A corrupt database is moved aside and a fresh one started: the
    /// journal is then empty, so nothing is resumed, and the lock starts locked.
    public static func openLock(_ directory: String, monotonicNow: @escaping () -> Instant,
                                report: (String) -> Void = { _ in }) throws(RuntimeError) -> LockStores {
        let store = try open(directory, lockFile, report: report)
        let journal = store.decisionJournal(monotonicNow: monotonicNow)
        do {
            let keys = store.keyStore()
            let identity = try LockIdentity(rawPrivateKey: try store.lockIdentity(create: LockIdentity.newRawPrivateKey))
            return LockStores(journal: journal, interrupted: try journal.interrupted(),
                              lastDecisionID: try journal.lastDecisionID(),
                              log: StoredLockEventLog(store.eventLog()), keys: keys,
                              lockout: store.lockoutStore(monotonicNow: monotonicNow),
                              pairing: (registry: keys, identity: identity))
        } catch { throw RuntimeError("lock store \(store.path): \(error)") }
    }

    public static func openPhone(_ directory: String, report: (String) -> Void = { _ in }) throws(RuntimeError)
        -> any PhoneStateStore
    {
        try open(directory, phoneFile, report: report).phoneStateStore()
    }

    public static func openKeys(_ directory: String) throws(RuntimeError) -> StoredKeyStore {
        try open(directory, lockFile, report: { _ in }).keyStore()
    }

    public static func openEventLog(_ directory: String) throws(RuntimeError) -> StoredEventLog {
        try open(directory, lockFile, report: { _ in }).eventLog()
    }

    static func open(_ directory: String, _ file: String, report: (String) -> Void) throws(RuntimeError) -> AgentStore {
        do {
            return try AgentStore(directory: directory, fileName: file)
        } catch {
            guard case .corrupt(let corruption) = error else {
                throw RuntimeError("cannot open the store in \(directory): \(error)")
            }
            do {
                let aside = try corruption.quarantine()
                report("store \(corruption.path) was unusable (\(corruption.reason)); moved to \(aside), starting fresh")
                return try AgentStore(directory: directory, fileName: file)
            } catch {
                throw RuntimeError("store \(corruption.path) is corrupt and could not be moved aside: \(error)")
            }
        }
    }
}

/// The SQLite event log behind the agent's `LockEventLog` seam.
final class StoredLockEventLog: LockEventLog {
    let stored: StoredEventLog
    private var last: UInt32
    init(_ stored: StoredEventLog) {
        self.stored = stored
        last = UInt32(truncatingIfNeeded: (try? stored.lastSequence()) ?? 0)
    }
    func append(_ event: LockEvent) throws -> UInt32 {
        last = UInt32(truncatingIfNeeded: try stored.append(event))
        return last
    }
    func events(from sequence: UInt32, limit: Int) throws -> [(sequence: UInt32, bytes: [UInt8])] {
        try stored.read(from: UInt64(sequence), limit: limit).map { (UInt32(truncatingIfNeeded: $0.sequence), $0.event.encoded) }
    }
    var lastSequence: UInt32 { last }
}
