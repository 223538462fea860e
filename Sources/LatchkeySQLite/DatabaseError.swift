import CSQLite

/// An SQLite call that failed: its (extended) result code, SQLite's message and the SQL.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    /// The extended result code (SQLITE_BUSY_SNAPSHOT, SQLITE_IOERR_FSYNC, ...).
    public var extendedResultCode: Int32
    public var message: String
    public var sql: String?

    public init(extendedResultCode: Int32, message: String, sql: String? = nil) {
        self.extendedResultCode = extendedResultCode
        self.message = message
        self.sql = sql
    }

    /// The primary result code: SQLITE_NOTADB, SQLITE_CORRUPT, SQLITE_BUSY, ...
    public var resultCode: Int32 { extendedResultCode & 0xFF }

    public var description: String {
        var out = "SQLite error \(extendedResultCode): \(message)"
        if let sql { out += " - while executing `\(sql)`" }
        return out
    }

    /// The error `code` on `connection`, with the connection's message when it has one.
    static func last(_ code: Int32, on connection: OpaquePointer?, sql: String? = nil) -> DatabaseError {
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(code))
        return DatabaseError(extendedResultCode: code, message: message, sql: sql)
    }
}

/// A stored value that does not convert to the type asked for (or a column that is not there).
public struct RowDecodingError: Error, Sendable, CustomStringConvertible {
    public var column: String
    public var found: DatabaseValue?
    public var expected: String

    public var description: String {
        guard let found else { return "no column '\(column)' in the row" }
        return "column '\(column)' holds \(found), not a \(expected)"
    }
}
