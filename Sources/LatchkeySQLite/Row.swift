/// One result row, copied out of its statement: column names and values.
public struct Row: Sendable {
    public let columns: [String]
    public let values: [DatabaseValue]

    public init(columns: [String], values: [DatabaseValue]) {
        precondition(columns.count == values.count, "one value per column")
        self.columns = columns
        self.values = values
    }

    /// The value of `column` (names compare as SQLite does, ignoring ASCII case); nil when the
    /// row has no such column.
    public func value(_ column: String) -> DatabaseValue? {
        if let index = columns.firstIndex(of: column) { return values[index] }
        let lowered = column.lowercased()
        return columns.firstIndex { $0.lowercased() == lowered }.map { values[$0] }
    }

    /// The column as `T`; throws when it is missing or holds another type (for an optional
    /// `T`, NULL is nil).
    public func decode<T: DatabaseValueConvertible>(_ type: T.Type = T.self, forColumn column: String) throws -> T {
        guard let value = value(column) else { throw RowDecodingError(column: column, found: nil, expected: "\(T.self)") }
        guard let decoded = T.fromDatabaseValue(value) else {
            throw RowDecodingError(column: column, found: value, expected: "\(T.self)")
        }
        return decoded
    }

    /// The column as `T`, for columns the schema guarantees (NOT NULL in a STRICT table):
    /// a mismatch is a programming error and traps. Use `decode(forColumn:)` for anything else.
    public subscript<T: DatabaseValueConvertible>(_ column: String) -> T {
        do { return try decode(forColumn: column) } catch { preconditionFailure("\(error)") }
    }

    /// The first value of `row`, for the one-column queries of `fetchOne`/`fetchAll`.
    func first<T: DatabaseValueConvertible>(as type: T.Type, sql: String) throws -> T? {
        guard let value = values.first else { return nil }
        if case .null = value { return nil }
        guard let decoded = T.fromDatabaseValue(value) else {
            throw RowDecodingError(column: columns.first ?? sql, found: value, expected: "\(T.self)")
        }
        return decoded
    }
}

extension Row {
    /// The first row `sql` returns, or nil.
    public static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Row? {
        var found: Row?
        try db.query(sql, arguments) { row in
            found = row
            return false
        }
        return found
    }

    /// Every row `sql` returns.
    public static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Row] {
        var rows: [Row] = []
        try db.query(sql, arguments) { row in
            rows.append(row)
            return true
        }
        return rows
    }
}

extension DatabaseValueConvertible {
    /// The first column of the first row, or nil when there is no row or it holds NULL.
    public static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try Row.fetchOne(db, sql: sql, arguments: arguments)?.first(as: Self.self, sql: sql)
    }

    /// The first column of every row; NULLs are skipped.
    public static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try Row.fetchAll(db, sql: sql, arguments: arguments).compactMap { try $0.first(as: Self.self, sql: sql) }
    }
}
