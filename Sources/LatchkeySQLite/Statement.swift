import CSQLite

/// One prepared statement: binds `StatementArguments`, steps, copies rows out. Reset after
/// every use, so that a cached statement never holds a read transaction open.
final class Statement {
    let sql: String
    private let handle: OpaquePointer
    private unowned let connection: Database
    private lazy var columns: [String] = (0..<sqlite3_column_count(handle)).map {
        sqlite3_column_name(handle, $0).map { String(cString: $0) } ?? ""
    }

    /// Prepares the first statement of `sql`; `tail` is where the next one starts (for
    /// scripts of several statements), nil at the end.
    init?(_ sql: UnsafePointer<CChar>, length: Int32, connection: Database,
          tail: inout UnsafePointer<CChar>?) throws(DatabaseError) {
        var handle: OpaquePointer?
        let code = sqlite3_prepare_v2(connection.handle, sql, length, &handle, &tail)
        guard code == SQLITE_OK else { throw DatabaseError.last(code, on: connection.handle, sql: String(cString: sql)) }
        guard let handle else { return nil }  // only whitespace or a comment
        self.handle = handle
        self.connection = connection
        self.sql = String(cString: sqlite3_sql(handle))
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `arguments` and steps to the end, skipping any rows.
    func run(_ arguments: StatementArguments) throws {
        try run(arguments) { _ in true }
    }

    /// Binds `arguments`, then calls `row` for each result row until it returns false.
    func run(_ arguments: StatementArguments, row: (Row) throws -> Bool) throws {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        try bind(arguments)
        while true {
            let code = sqlite3_step(handle)
            switch code {
            case SQLITE_DONE:
                return
            case SQLITE_ROW:
                guard try row(currentRow()) else { return }
            default:
                throw DatabaseError.last(code, on: connection.handle, sql: sql)
            }
        }
    }

    private func bind(_ arguments: StatementArguments) throws(DatabaseError) {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.values.count == expected else {
            throw DatabaseError(extendedResultCode: SQLITE_RANGE,
                                message: "\(arguments.values.count) arguments for \(expected) parameters", sql: sql)
        }
        for (offset, value) in arguments.values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let v): code = sqlite3_bind_int64(handle, index, v)
            case .real(let v): code = sqlite3_bind_double(handle, index, v)
            case .text(let v): code = sqlite3_bind_text(handle, index, v, -1, latchkey_sqlite_transient())
            case .blob(let v):
                code = v.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), latchkey_sqlite_transient()) }
            }
            guard code == SQLITE_OK else { throw DatabaseError.last(code, on: connection.handle, sql: sql) }
        }
    }

    private func currentRow() -> Row {
        Row(columns: columns, values: (0..<Int32(columns.count)).map(value(at:)))
    }

    private func value(at index: Int32) -> DatabaseValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            let bytes = sqlite3_column_text(handle, index)
            let count = Int(sqlite3_column_bytes(handle, index))
            return .text(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, index))
            guard count > 0, let bytes = sqlite3_column_blob(handle, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default:
            return .null
        }
    }
}
