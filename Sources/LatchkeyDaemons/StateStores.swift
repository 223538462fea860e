#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import LatchkeyControl
import LatchkeyLock
import LatchkeyPhone
import LatchkeySecurity
import LatchkeyManagers
import LatchkeyStore
import LatchkeyTransport

/// Opens the agents' SQLite stores in their state directories.
public enum StateStores {
    public static let lockFile = "lock.db"
    public static let phoneFile = "phone.db"

    /// The lock's store: the journal and the log paired (`StoredLockRecords`), the keys and the
    /// restoration entries. A corrupt database is moved aside and a fresh one started, so the lock
    /// starts locked (`storeWasReset`: a LockFactoryReset alarm). On a read-only file system an
    /// existing store opens read-only and the lock runs degraded; with none there it exits 73
    /// (`exCantCreate`). `warn`: a store that works but not as well as it should, said once (its
    /// WAL not laid out: `AgentStore.walNotPrepared`). `random`: where a first start draws the
    /// lock's identity from (the daemon keeps the system's).
    public static func openLock(_ directory: String, loop: any EventLoop, wallClock: WallClock = .system,
                                fileSystem: StoreFileSystem = .system,
                                logRetention: Int = StoredEventLog.defaultRetention,
                                refusedCommits: RefusedCommitLedger? = nil,
                                random: RandomSource = .system,
                                warn: (String) -> Void = { _ in },
                                report: (String) -> Void = { _ in }) throws(RuntimeError) -> LockStores {
        var reset = false
        let store = try open(directory, lockFile, wallClock: wallClock, fileSystem: fileSystem, degrade: true,
                             report: { reset = true; report($0) })
        if let why = store.walNotPrepared { warn(why) }
        // Checkpoints on the loop's next turn: never between a command's record and its drive.
        store.checkpointScheduler = { loop.execute($0) }
        // Read by `interrupted()` below: an unlock the card refused is not resumed.
        store.refusedCommits = refusedCommits
        do {
            let records = try store.lockRecords(loop: loop, logRetention: logRetention)
            let keys = store.keyStore()
            let identity = try LockIdentity(rawPrivateKey: try store.lockIdentity(create: { LockIdentity.newRawPrivateKey(from: random) }))
            // The verifier's counters commit with the decisions (`StoredLockRecords+Counters`).
            return LockStores(journal: records, interrupted: try records.journal.interrupted(),
                              lastDecisionID: try records.journal.lastDecisionID(), log: records,
                              keys: records.commandKeys,
                              lockout: store.lockoutStore(monotonicNow: { loop.now }),
                              pairing: (registry: keys, identity: identity),
                              restoration: store.restorationStorage(), storeWasReset: reset,
                              operatingModes: store.operatingModeStore(), store: store)
        } catch { throw RuntimeError("lock store \(store.path): \(error)") }
    }

    /// The phone's state and its central manager's restoration entries, in one store.
    /// `warn` and `report` as for `openLock`.
    public static func openPhone(_ directory: String, wallClock: WallClock = .system,
                                 warn: (String) -> Void = { _ in },
                                 report: (String) -> Void = { _ in }) throws(RuntimeError)
        -> (state: any PhoneStateStore, restoration: any RestorationStorage)
    {
        let store = try openPhoneStore(directory, wallClock: wallClock, warn: warn, report: report)
        return (store.phoneStateStore(), store.restorationStorage())
    }

    /// The phone's store itself, on `fileSystem` (a simulator closes it when it kills the phone).
    public static func openPhoneStore(_ directory: String, wallClock: WallClock = .system,
                                      fileSystem: StoreFileSystem = .system,
                                      warn: (String) -> Void = { _ in },
                                      report: (String) -> Void = { _ in }) throws(RuntimeError) -> AgentStore {
        let store = try open(directory, phoneFile, wallClock: wallClock, fileSystem: fileSystem, report: report)
        if let why = store.walNotPrepared { warn(why) }
        return store
    }

    public static func openKeys(_ directory: String) throws(RuntimeError) -> StoredKeyStore {
        try open(directory, lockFile, report: { _ in }).keyStore()
    }

    public static func openEventLog(_ directory: String) throws(RuntimeError) -> StoredEventLog {
        try open(directory, lockFile, report: { _ in }).eventLog()
    }

    /// The lock's store for reading only (`latchkey status`, `log`, `keys list`): opened with
    /// SQLITE_OPEN_READONLY beside a running agent, creating no directory or file and moving
    /// nothing aside. Any problem is one sentence naming the directory.
    public static func openLockForReading(_ directory: String) throws(RuntimeError) -> AgentStore {
        do {
            return try AgentStore(directory: directory, fileName: lockFile, access: .readOnly)
        } catch {
            switch error {
            case .notAStore(_, let reason) where reason.hasPrefix("permission denied"):
                throw RuntimeError("cannot read \(directory): permission denied; run as the lock agent's user (sudo -u latchkey)")
            case .notAStore(let path, let reason) where path == directory:
                throw RuntimeError("\(directory) is not a lock agent's state directory: \(reason)")
            case .notAStore(_, let reason):
                throw RuntimeError("\(directory) holds no lock store (\(lockFile)): \(reason)")
            case .corrupt(let corruption):
                throw RuntimeError("\(corruption); left where it is (the lock agent moves it aside when it starts)")
            default:
                throw RuntimeError("cannot read the lock store in \(directory): \(error)")
            }
        }
    }

    /// EX_CANTCREAT (sysexits.h): the lock's state directory is read-only and holds no store
    /// to run on. The lock unit's `RestartPreventExitStatus=` lists it: no restart creates a
    /// file on a read-only card; systemd gives up at once and the gave-up alert tells someone.
    public static let exCantCreate: Int32 = 73

    /// `degrade`: on a read-only file system, an existing store opens read-only
    /// (`AgentStore.openForAgent`).
    static func open(_ directory: String, _ file: String, wallClock: WallClock = .system,
                     fileSystem: StoreFileSystem = .system, degrade: Bool = false,
                     report: (String) -> Void) throws(RuntimeError) -> AgentStore {
        do {
            return degrade ? try AgentStore.openForAgent(directory: directory, fileName: file, wallClock: wallClock,
                                                         fileSystem: fileSystem)
                           : try AgentStore(directory: directory, fileName: file, wallClock: wallClock,
                                            fileSystem: fileSystem)
        } catch {
            if degrade && error.isReadOnlyFileSystem {
                throw RuntimeError("cannot open the store in \(directory): \(error): the file system is read-only and "
                                   + "holds no \(file) to run on; remount it read-write (or repair the card) and start "
                                   + "the agent again", exitStatus: exCantCreate)
            }
            guard case .corrupt(let corruption) = error else {
                throw RuntimeError("cannot open the store in \(directory): \(error)")
            }
            do {
                let aside = try corruption.quarantine()
                report("store \(corruption.path) was unusable (\(corruption.reason)); moved to \(aside), starting fresh")
                return try AgentStore(directory: directory, fileName: file, wallClock: wallClock, fileSystem: fileSystem)
            } catch {
                throw RuntimeError("store \(corruption.path) is corrupt and could not be moved aside: \(error)")
            }
        }
    }
}
