import CSQLite

/// One connection to an SQLite file: the few calls the store makes, over SQLite's C API, named
/// after GRDB's, which this replaced (GRDB imports Foundation, whose ICU cost each static agent
/// ~6 MB of resident memory). Used from one thread, the agent's loop: opened without SQLite's
/// mutex, nothing Sendable. Prepared statements are cached by their SQL and reset after every
/// use, so none holds a read transaction open between calls.
public final class Database {
    public let path: String
    let handle: OpaquePointer
    private var statements: [String: Statement] = [:]
    private var isOpen = true
    /// Frames in the WAL after this connection's last commit, once `takeOverCheckpoints` has
    /// installed the hook that counts them (0 before).
    public internal(set) var walFrames = 0
    /// Far above the store's ~20 distinct statements; a bound in case SQL is ever built
    /// from values.
    private static let statementCacheLimit = 64

    /// How a connection opens its file.
    public enum Access: Sendable {
        /// Reads and writes, creating the file if it is missing (the agents).
        case readWrite
        /// SQLITE_OPEN_READONLY: never creates the file, and SQLite refuses every write
        /// (SQLITE_READONLY) — what `latchkey status`, `log` and `keys list` use beside a
        /// running agent.
        case readOnly
    }

    /// Opens the file at `path` (creating it if needed, for `.readWrite`). A file that is not
    /// a database opens fine: SQLite reads it at the first statement, which then fails with
    /// SQLITE_NOTADB. `busyTimeout`: how long a statement waits for another process's lock.
    public init(path: String, busyTimeout: Duration, access: Access = .readWrite) throws(DatabaseError) {
        self.path = path
        var connection: OpaquePointer?
        let flags = switch access {
        case .readWrite: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readOnly: SQLITE_OPEN_READONLY
        }
        let code = sqlite3_open_v2(path, &connection, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let connection else {
            let error = DatabaseError.last(code, on: connection)
            sqlite3_close_v2(connection)
            throw error
        }
        handle = connection
        sqlite3_extended_result_codes(connection, 1)
        let milliseconds = busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(connection, Int32(clamping: milliseconds))
    }

    deinit {
        guard isOpen else { return }
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Finalizes the cached statements and closes the connection (the last connection to a
    /// WAL database checkpoints it). Closing twice does nothing.
    public func close() throws(DatabaseError) {
        guard isOpen else { return }
        statements.removeAll()
        let code = sqlite3_close(handle)
        guard code == SQLITE_OK else { throw DatabaseError.last(code, on: handle) }
        isOpen = false
    }

    // MARK: Statements

    /// Runs `sql` — one statement, or a script of several when there are no arguments —
    /// stepping through any rows it returns.
    public func execute(sql: String, arguments: StatementArguments = []) throws {
        if let cached = statements[sql] {
            try cached.run(arguments)
            return
        }
        try sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            var first = true
            while let current = next, current.pointee != 0 {
                guard let statement = try Statement(current, length: -1, connection: self, tail: &next) else { break }
                let single = first && Self.isBlank(next)
                try statement.run(first ? arguments : [])
                if single { remember(statement, for: sql) }
                first = false
            }
        }
    }

    /// Runs the one statement `sql` and calls `row` for each result row until it returns false.
    func query(_ sql: String, _ arguments: StatementArguments, row: (Row) throws -> Bool) throws {
        try statement(sql).run(arguments, row: row)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changesCount: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the last INSERT on this connection.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    // MARK: Transactions

    public enum TransactionKind: Sendable {
        /// Takes locks as statements need them: for reads.
        case deferred
        /// Takes the write lock at BEGIN (waiting up to the busy timeout): for writes, so
        /// that a transaction that reads then writes cannot fail with SQLITE_BUSY_SNAPSHOT
        /// when another process committed in between.
        case immediate
    }

    /// Whether a transaction is open.
    public var isInsideTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it (or
    /// the commit) throws.
    public func inTransaction<T>(_ kind: TransactionKind, _ body: (Database) throws -> T) throws -> T {
        try execute(sql: kind == .immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        do {
            let result = try body(self)
            try execute(sql: "COMMIT")
            return result
        } catch {
            // A failed COMMIT (SQLITE_BUSY) leaves the transaction open; an I/O error may
            // already have rolled it back.
            if isInsideTransaction { try? execute(sql: "ROLLBACK") }
            throw error
        }
    }

    // MARK: Statement cache

    private func statement(_ sql: String) throws -> Statement {
        if let cached = statements[sql] { return cached }
        return try sql.withCString { (start) throws -> Statement in
            var tail: UnsafePointer<CChar>?
            guard let statement = try Statement(start, length: -1, connection: self, tail: &tail) else {
                throw DatabaseError(extendedResultCode: SQLITE_MISUSE, message: "no statement in the SQL", sql: sql)
            }
            guard Self.isBlank(tail) else {
                throw DatabaseError(extendedResultCode: SQLITE_MISUSE, message: "more than one statement", sql: sql)
            }
            remember(statement, for: sql)
            return statement
        }
    }

    private func remember(_ statement: Statement, for sql: String) {
        if statements.count >= Self.statementCacheLimit { statements.removeAll() }
        statements[sql] = statement
    }

    /// Whether the rest of a script is empty or whitespace (`;` already consumed).
    private static func isBlank(_ tail: UnsafePointer<CChar>?) -> Bool {
        guard var p = tail else { return true }
        while p.pointee != 0 {
            switch p.pointee {
            case 0x20, 0x09, 0x0A, 0x0D: p += 1
            default: return false
            }
        }
        return true
    }
}
