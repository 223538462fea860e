/// A database file that cannot be trusted: not a database at all (garbage, a half-written
/// header) or one whose integrity check fails (a truncated file, a damaged page).
/// What the caller does with it (the lock agent):
/// 1. log it (and raise an alert: the audit log and the keys are gone);
/// 2. `quarantine()` — the file and its WAL are moved aside, not deleted, for a post-mortem;
/// 3. open the store again: it starts empty, so there is no interrupted decision, and the
///    lock **stays locked** — it reads its sensors and never unlocks for a decision it cannot
///    read. Phones must be paired again: the keys were in the bad file.
public struct StoreCorruption: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        /// SQLite says the file is not a database (SQLITE_NOTADB).
        case notADatabase = "not a database"
        /// `PRAGMA integrity_check` reported damage, or SQLite hit SQLITE_CORRUPT.
        case integrityCheckFailed = "integrity check failed"
    }

    /// The database file.
    public var path: String
    public var reason: Reason
    /// SQLite's own words (the first lines of the integrity check, or the error message).
    public var detail: String

    public init(path: String, reason: Reason, detail: String) {
        self.path = path
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "store \(path) is unusable: \(reason) (\(detail))" }

    /// Moves the database file and its `-wal`/`-shm` companions aside, to
    /// `<file>.corrupt-<wall seconds>` (plus the same suffixes), so that the next open starts
    /// from an empty store. Returns the new path of the database file.
    ///
    /// The WAL goes with the file: replaying a WAL onto a different (fresh) database would
    /// be corruption of its own.
    @discardableResult
    public func quarantine(wallClock: WallClock = .system) throws(StoreError) -> String {
        let seconds = wallClock.nanosecondsSinceEpoch() / 1_000_000_000
        var target = "\(path).corrupt-\(seconds)"
        var attempt = 1
        while StoreFiles.exists(target) {  // two quarantines in one second: keep both
            attempt += 1
            target = "\(path).corrupt-\(seconds)-\(attempt)"
        }
        for suffix in ["-wal", "-shm"] where StoreFiles.exists(path + suffix) {
            try StoreFiles.rename(path + suffix, to: target + suffix)
        }
        try StoreFiles.rename(path, to: target)
        try StoreFiles.syncDirectory(of: path)
        return target
    }
}
