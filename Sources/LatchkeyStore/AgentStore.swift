import CSQLite  // SQLITE_ERROR, SQLITE_IOERR, SQLITE_FULL
import LatchkeyLock
import LatchkeyPhone
import LatchkeySQLite
import LatchkeyTransport

/// The durable store behind an agent: one SQLite file in its state directory holding the
/// decision journal, the event log, the phone keys and their counters, the phone state and the
/// restoration entries. WAL with `synchronous=FULL`: every write transaction is fsync'ed before
/// the call returns, on the one event loop, so nothing moves before it is written. Opening
/// checks the file (`PRAGMA integrity_check`) and throws `StoreError.corrupt` naming it
/// (`StoreCorruption` says what the caller does). Only this module speaks SQL (through
/// `LatchkeySQLite`); agents see the protocols it defines.
public final class AgentStore {
    /// The state directory (mode 0700).
    public let directory: String
    /// The database file (mode 0600).
    public let path: String
    public let wallClock: WallClock
    private(set) var connection: Database
    private var isClosed = false
    /// How the directory and the file are prepared before SQLite opens them (the real calls,
    /// or a test's read-only file system), kept for `reopenForWriting`.
    private let fileSystem: StoreFileSystem
    /// Open read-only because its file system is (`openForAgent`): every write throws
    /// (SQLITE_READONLY) until `reopenForWriting` succeeds.
    public private(set) var isReadOnly: Bool
    /// The tests' fault-injection seam (a full, failing or read-only card): asked before
    /// every write transaction; a fault it returns is thrown instead of writing. Nil in the agents.
    public var injectedWriteFault: (() -> StoreError?)?

    /// Opens (creating if needed) `<directory>/<fileName>`, checks its integrity and brings
    /// its schema up to date. The lock agent uses "lock.db", the phone agent "phone.db".
    ///
    /// `.readOnly` (the inspection commands, beside a running agent): creates nothing —
    /// neither the directory nor the file —, changes no mode, sets no pragma and migrates
    /// nothing; a missing or foreign directory or file throws `.notAStore`, a damaged file
    /// `.corrupt` (which the caller reports: only the agent moves a database aside).
    public init(directory: String, fileName: String, wallClock: WallClock = .system,
                access: Database.Access = .readWrite, fileSystem: StoreFileSystem = .system) throws(StoreError) {
        self.directory = directory
        self.path = directory + "/" + fileName
        self.wallClock = wallClock
        self.fileSystem = fileSystem
        isReadOnly = access == .readOnly
        if access == .readOnly {
            try StoreFiles.requireExisting(directory: directory, file: path)
        } else {
            try fileSystem.prepare(directory, path)
        }
        connection = try Self.connect(path, access: access, vfs: fileSystem.sqliteVFS)
        if access == .readOnly {
            try checkIntegrity()
            try requireCurrentSchema()
            return
        }
        try storeOperation(path: path) { try Self.configure(connection) }
        try checkIntegrity()
        try migrate()
        prepareWAL()
    }

    /// The agents' open: read-write — or, when the state directory's file system is
    /// read-only (EROFS: an SD card gone read-only) and the store is there already,
    /// read-only (`isReadOnly`): the lock then runs degraded on what it holds, every write
    /// throws, and `reopenForWriting` tries read-write again. With no store to read, the
    /// EROFS error is thrown.
    public static func openForAgent(directory: String, fileName: String, wallClock: WallClock = .system,
                                    fileSystem: StoreFileSystem = .system) throws(StoreError) -> AgentStore {
        do {
            return try AgentStore(directory: directory, fileName: fileName, wallClock: wallClock, fileSystem: fileSystem)
        } catch let error where error.isReadOnlyFileSystem && StoreFiles.exists(directory + "/" + fileName) {
            return try AgentStore(directory: directory, fileName: fileName, wallClock: wallClock, access: .readOnly,
                                  fileSystem: fileSystem)
        }
    }

    /// A store open read-only (`isReadOnly`) tries to open its file read-write again, as
    /// the agent's first open would (directory and file modes, WAL, schema). Throws while
    /// the file system is still read-only; the store then stays read-only.
    public func reopenForWriting() throws(StoreError) {
        guard isReadOnly, !isClosed else { return }
        try fileSystem.prepare(directory, path)
        // The read-only connection goes first: one opened beside it shares SQLite's state of
        // the file (its WAL index, mapped read-only from the read-only mount) and is refused
        // every write (SQLITE_READONLY at BEGIN IMMEDIATE; seen on a remounted tmpfs).
        try storeOperation(path: path) { try connection.close() }
        do throws(StoreError) {
            connection = try Self.connect(path, access: .readWrite, vfs: fileSystem.sqliteVFS)
            try storeOperation(path: path) { try Self.configure(connection) }
            try migrate()
            isReadOnly = false
            // Not laid out here: this runs on the agent's loop while it serves (`StoreReopener`),
            // and 4 MiB written and synced on a card that just came back could hold a command.
            walNotPrepared = "reopened for writing while running (the store started read-only): "
                + "its commits grow the WAL until the agent's next start lays it out"
        } catch {
            // Reading again, as before; when even that fails, every use of the store throws.
            if let reading = try? Self.connect(path, access: .readOnly, vfs: fileSystem.sqliteVFS) { connection = reading }
            throw error
        }
    }

    private static func connect(_ path: String, access: Database.Access, vfs: String?) throws(StoreError) -> Database {
        // Another process (a `latchkey keys` command) may hold the write lock for one small
        // transaction; wait for it rather than fail a decision. 1 s: far above one fsync
        // (~ms, `StoreBenchmark`) and far below the 10 s wake budget.
        try storeOperation(path: path) { try Database(path: path, busyTimeout: .seconds(1), access: access, vfs: vfs) }
    }

    /// The WAL file's working size: SQLite checkpoints once the WAL holds 1,000 pages
    /// (4,120,032 octets at 4 KiB pages) and then writes the next frames over the old ones,
    /// so a WAL this long is overwritten in place for good. Also its `journal_size_limit`:
    /// SQLite cuts a WAL that grew past it (a checkpoint held back by a reader) back to it.
    public static let walWorkingSize: Int64 = 4_194_304

    /// WAL with synchronous=FULL, the WAL kept across closes. A file that is not a database
    /// fails here, at its first read (SQLITE_NOTADB).
    private static func configure(_ db: Database) throws {
        let mode = try Row.fetchOne(db, sql: "PRAGMA journal_mode=WAL")?.values.first?.text
        guard mode == "wal" else {
            throw DatabaseError(extendedResultCode: SQLITE_ERROR, message: "could not enable WAL (journal_mode is \(mode ?? "?"))")
        }
        try db.execute(sql: "PRAGMA synchronous=FULL")
        // Keep the WAL file across closes, cut to its working size: commits then overwrite
        // WAL blocks in place instead of growing the file, so the sync need not also commit a
        // new file size. On the development VM under I/O load, growing commits took 4 ms
        // (median) and in-place ones 0.45 ms in the same run; unloaded, both ~0.3 ms
        // (`latchkey-bench`). A clean close still empties the file (SQLite truncates a
        // persistent WAL to zero when journal_size_limit is set): `prepareWAL` lays it out again.
        try db.keepWALFileAcrossCloses()
        try db.execute(sql: "PRAGMA journal_size_limit=\(walWorkingSize)")
        // Checkpoints where the store says (`checkpointScheduler`), not inside a commit.
        db.takeOverCheckpoints()
    }

    /// Gives the WAL file its working size before any decision is written (`walWorkingSize`,
    /// `Database.extendWALFile`): otherwise every commit of a lock's first ~1,000 pages after each
    /// start grew the file, and under a syncing writer the commit in front of the motor had a p99
    /// of 7.4 ms against 0.45 ms at its median (CHANGELOG.md, "Under load, and the table in one
    /// command"). Never the card's last space: only while `walWorkingSize` more stays free. A store
    /// not laid out works as before and says why in `walNotPrepared` (a warning).
    private func prepareWAL() {
        do {
            walNotPrepared = try storeOperation(path: path) {
                try connection.inTransaction(.immediate) { db -> String? in
                    let missing = Self.walWorkingSize - (try db.walFileSize())
                    guard missing > 0 else { return nil }
                    let free = fileSystem.freeBytes(directory)
                    if let free, free < missing + Self.walWorkingSize {
                        return "\(free) bytes free in \(directory): laying out the WAL file takes \(missing) "
                            + "and would leave less than \(Self.walWorkingSize); its commits grow it instead"
                    }
                    try db.extendWALFile(toBytes: Self.walWorkingSize)
                    return nil
                }
            }
        } catch {
            walNotPrepared = "laying out the WAL file failed (\(error)); its commits grow it instead"
        }
    }

    /// Why the WAL file was not given its working size at the last read-write open
    /// (`prepareWAL`), or nil. The store works without it; the agents report it as a warning.
    public private(set) var walNotPrepared: String?

    /// `PRAGMA integrity_check` over the whole file: ~ms for a lock's store (10,000 log
    /// rows), so it runs at every open. Throws `.corrupt` with SQLite's first findings.
    public func checkIntegrity() throws(StoreError) {
        let findings = try read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check(10)") }
        guard findings != ["ok"] else { return }
        throw .corrupt(StoreCorruption(path: path, reason: .integrityCheckFailed,
                                       detail: findings.prefix(3).joined(separator: "; ")))
    }

    private func migrate() throws(StoreError) {
        let migrator = StoreSchema.migrator
        let applied = try read { db in try migrator.appliedIdentifiers(db) }
        let unknown = applied.subtracting(migrator.migrations)
        guard unknown.isEmpty else { throw .newerSchema(path: path, unknownMigrations: unknown.sorted()) }
        try storeOperation(path: path) { try migrator.migrate(connection, applied: applied) }
    }

    /// A read-only store cannot migrate: its schema must be exactly what this program writes.
    private func requireCurrentSchema() throws(StoreError) {
        let migrator = StoreSchema.migrator
        let applied = try read { db in try migrator.appliedIdentifiers(db) }
        guard !applied.isEmpty else { throw .notAStore(path: path, reason: "not a Latchkey store (no schema)") }
        let unknown = applied.subtracting(migrator.migrations)
        guard unknown.isEmpty else { throw .newerSchema(path: path, unknownMigrations: unknown.sorted()) }
        guard applied.count == migrator.migrations.count else {
            throw .notAStore(path: path, reason: "written by an older latchkey; start the agent once to update it")
        }
    }

    /// The SQLite pragma values in force (as text), for diagnostics and tests.
    public func pragma(_ name: String) throws(StoreError) -> String? {
        try read { db in try Row.fetchOne(db, sql: "PRAGMA \(name)")?.values.first?.text }
    }

    /// Closes the connection; further calls fail. Dropping the store closes it too.
    public func close() throws(StoreError) {
        guard !isClosed else { return }
        try storeOperation(path: path) { try connection.close() }
        isClosed = true
    }

    // MARK: Views: each implements one job over the same connection.

    /// The lock's decision journal. `monotonicNow` is the lock's event-loop clock
    /// (`{ loop.now }`): the journal converts its `Instant`s to and from wall time.
    public func decisionJournal(monotonicNow: @escaping () -> Instant,
                                retention: Int = StoredDecisionJournal.defaultRetention) -> StoredDecisionJournal {
        StoredDecisionJournal(store: self, monotonicNow: monotonicNow, retention: retention)
    }

    public func eventLog(retention: Int = StoredEventLog.defaultRetention) -> StoredEventLog {
        StoredEventLog(store: self, retention: retention)
    }

    public func keyStore() -> StoredKeyStore { StoredKeyStore(store: self) }

    /// The lock's failed-attempt counts. `monotonicNow` is the lock's event-loop clock.
    public func lockoutStore(monotonicNow: @escaping () -> Instant) -> StoredLockoutStore {
        StoredLockoutStore(store: self, monotonicNow: monotonicNow)
    }

    public func phoneStateStore() -> StoredPhoneStateStore { StoredPhoneStateStore(store: self) }

    public func restoration() -> RestorationStore { RestorationStore(store: self) }

    // MARK: Access for the views

    /// `body` in an immediate transaction: committed (and fsync'ed) when it returns. A
    /// checkpoint it makes due runs where `checkpointScheduler` says.
    func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        guard !isClosed else { throw .database(path: path, message: "the store is closed") }
        if let fault = injectedWriteFault?() { throw fault }
        let result: T
        do {
            result = try connection.inTransaction(.immediate, body)
        } catch {
            if let failure = error as? DatabaseError, failure.resultCode == SQLITE_IOERR || failure.resultCode == SQLITE_FULL {
                supersedeFailedCommit()
            }
            throw StoreError.wrapping(error, path: path)
        }
        scheduleCheckpointIfDue()
        return result
    }

    /// After a write transaction failed in I/O (SQLITE_IOERR, SQLITE_FULL): one small
    /// commit, so the failed one can never come back. A commit whose sync failed has its WAL
    /// frames in the file, the last marked as a commit, and the next process's recovery would
    /// find them valid: a decision whose `record` threw would be resumed at the next start.
    /// This commit's frames overwrite theirs and break their checksum chain. When the disk
    /// refuses it too (read-only), `unsupersededCommits` counts it, and a store open
    /// read-only resumes no interrupted unlock (`StoredDecisionJournal.interrupted`).
    private func supersedeFailedCommit() {
        failedCommits += 1
        do {
            try connection.inTransaction(.immediate) { db in
                try db.execute(sql: """
                    INSERT INTO meta (name, value) VALUES ('failedCommits', 1)
                    ON CONFLICT (name) DO UPDATE SET value = value + 1
                    """)
            }
        } catch {
            unsupersededCommits += 1
        }
    }

    /// `body`, the write of decision `id`: when it fails and the disk refused the superseding
    /// commit too, `id` goes into `refusedCommits`, so no later process resumes it.
    func writingDecision<T, E: Error>(_ id: DecisionID, _ body: () throws(E) -> T) throws(E) -> T {
        let before = unsupersededCommits
        do { return try body() } catch {
            if unsupersededCommits > before {
                var failure: StoreError?
                do throws(StoreError) { try refusedCommits?.add(id) } catch let error { failure = error }
                onRefusedCommit?(id, refusedCommits, failure)
            }
            throw error
        }
    }

    /// Where decisions whose commit could not be superseded are remembered (the lock's
    /// runtime directory); nil: nowhere, and a restart before a reboot may resume one.
    public var refusedCommits: RefusedCommitLedger?
    /// Told of each such decision, with the ledger's write error if it could not be remembered.
    public var onRefusedCommit: ((DecisionID, RefusedCommitLedger?, StoreError?) -> Void)?

    /// Write transactions that failed in I/O since the store opened (`supersedeFailedCommit`).
    public private(set) var failedCommits = 0
    /// Of those, the ones the store could not supersede: the disk refused that write too.
    public private(set) var unsupersededCommits = 0

    /// SQLite's own threshold: a checkpoint once the WAL holds this many frames.
    public static let checkpointFrames = 1_000

    /// Where a due checkpoint runs: nil, right after the write that made it due; the lock's store
    /// hands it to its event loop's next turn (`StateStores.openLock`), so no write on a command's
    /// way to the motor is followed by a checkpoint before the line has changed (the record and the
    /// drive happen in one turn, `LockController`). The connection counts WAL frames itself
    /// (`Database.takeOverCheckpoints`) instead of SQLite checkpointing inside a commit.
    public var checkpointScheduler: ((@escaping () -> Void) -> Void)?
    private var checkpointScheduled = false

    private func scheduleCheckpointIfDue() {
        guard connection.walFrames >= Self.checkpointFrames else { return }
        guard let scheduler = checkpointScheduler else { return checkpoint() }
        guard !checkpointScheduled else { return }
        checkpointScheduled = true
        scheduler { [weak self] in
            guard let self else { return }
            checkpointScheduled = false
            guard !isClosed, connection.walFrames >= Self.checkpointFrames else { return }
            checkpoint()
        }
    }

    /// A passive checkpoint. One left partial (frames a reader still needs) is SQLite's
    /// ordinary case and is tried again after the next write. A failed one (an I/O error, a
    /// full card that cannot take the database's new pages) is too, as SQLite's own would
    /// be: the frames stay in the WAL, durable, and a WAL that can never be emptied grows
    /// until a commit fails and the store reports that. Each failure is counted
    /// (`checkpointsFailed`, in `status`) and told to `onCheckpointFailure` when its error
    /// differs from the last one told, so a card that keeps failing is said once, not at
    /// every write.
    private func checkpoint() {
        do {
            try connection.checkpoint()
        } catch {
            checkpointsFailed += 1
            let message = "\(error)"
            if message != lastCheckpointFailure { onCheckpointFailure?(message) }
            lastCheckpointFailure = message
        }
    }

    /// Told a failed checkpoint's error (`checkpoint`): the agents make it a warning.
    public var onCheckpointFailure: ((String) -> Void)?
    private var lastCheckpointFailure: String?

    /// The `status` field `wal=`: `laid_out` (commits overwrite it in place), `grows` (not
    /// laid out at the last open: `walNotPrepared`), `read_only`; then
    /// `,checkpoints_failed:N` once any failed.
    public var walStatus: String {
        let layout = isReadOnly ? "read_only" : walNotPrepared == nil ? "laid_out" : "grows"
        return checkpointsFailed == 0 ? layout : "\(layout),checkpoints_failed:\(checkpointsFailed)"
    }

    /// Checkpoints that failed since the store opened (each retried after the next write).
    public private(set) var checkpointsFailed = 0

    /// `body` in a deferred transaction: its reads see one state of the file.
    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        guard !isClosed else { throw .database(path: path, message: "the store is closed") }
        return try storeOperation(path: path) { try connection.inTransaction(.deferred, body) }
    }
}
