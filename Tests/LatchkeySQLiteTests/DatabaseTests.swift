import CSQLite
import Glibc
import LatchkeySQLite
import Testing

/// A database file in a private scratch directory, removed afterwards.
final class ScratchDatabase {
    let directory: String
    var path: String { directory + "/test.db" }

    init() {
        var template = Array("/tmp/latchkey-sqlite-test-XXXXXX".utf8CString)
        directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    func open() throws -> Database { try Database(path: path, busyTimeout: .milliseconds(50)) }

    deinit {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
        rmdir(directory)
    }
}

struct DatabaseTests {
    @Test func valuesRoundTripThroughEveryStorageClass() throws {
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        try db.execute(sql: "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n INTEGER, f INTEGER) STRICT")
        let blob: [UInt8] = [0, 1, 0xFF, 0]
        let missing: Int64? = nil
        try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)",
                       arguments: [Int64.min, 2.5, "é ✓", blob, missing, true])
        let row = try #require(try Row.fetchOne(db, sql: "SELECT * FROM t"))
        #expect(row.columns == ["i", "r", "s", "b", "n", "f"])
        #expect(try row.decode(Int64.self, forColumn: "i") == .min)
        #expect(try row.decode(Double.self, forColumn: "r") == 2.5)
        #expect(try row.decode(String.self, forColumn: "s") == "é ✓")
        #expect(try row.decode([UInt8].self, forColumn: "b") == blob)
        #expect(try row.decode(Int64?.self, forColumn: "n") == nil)
        #expect(try row.decode(Bool.self, forColumn: "F") == true, "column names ignore ASCII case")
        let i: Int64 = row["i"]
        #expect(i == .min)
        let empty: [UInt8] = []
        try db.execute(sql: "UPDATE t SET b = ?", arguments: [empty])
        #expect(try [UInt8].fetchOne(db, sql: "SELECT b FROM t") == [])
    }

    @Test func conversionsAreStrict() throws {
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        try db.execute(sql: "CREATE TABLE t (i INTEGER, s TEXT)")
        try db.execute(sql: "INSERT INTO t VALUES (300, '12')")
        let row = try #require(try Row.fetchOne(db, sql: "SELECT * FROM t"))
        #expect(throws: RowDecodingError.self) { try row.decode(UInt8.self, forColumn: "i") }  // out of range
        #expect(throws: RowDecodingError.self) { try row.decode(Int64.self, forColumn: "s") }  // text, not integer
        #expect(throws: RowDecodingError.self) { try row.decode(String.self, forColumn: "i") }
        #expect(throws: RowDecodingError.self) { try row.decode(Int64?.self, forColumn: "nowhere") }
        #expect(throws: RowDecodingError.self) { try String.fetchOne(db, sql: "SELECT i FROM t") }
        #expect(try UInt32.fetchOne(db, sql: "SELECT i FROM t") == 300)
    }

    @Test func fetchOneIsNilWithoutARowOrForNull() throws {
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        try db.execute(sql: "CREATE TABLE t (v INTEGER)")
        #expect(try Int64.fetchOne(db, sql: "SELECT v FROM t") == nil)
        #expect(try Int64.fetchOne(db, sql: "SELECT max(v) FROM t") == nil)
        try db.execute(sql: "INSERT INTO t VALUES (1), (NULL), (3)")
        #expect(try Int64.fetchAll(db, sql: "SELECT v FROM t ORDER BY rowid") == [1, 3])
        #expect(try Row.fetchAll(db, sql: "SELECT v FROM t WHERE v > ?", arguments: [1]).count == 1)
    }

    @Test func changesAndRowIDsAreReported() throws {
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, v INTEGER)")
        try db.execute(sql: "INSERT INTO t (v) VALUES (?)", arguments: [10])
        try db.execute(sql: "INSERT INTO t (v) VALUES (?)", arguments: [20])
        #expect(db.lastInsertedRowID == 2)
        try db.execute(sql: "UPDATE t SET v = v + 1 WHERE v > ?", arguments: [0])
        #expect(db.changesCount == 2)
    }

    @Test func aScriptOfSeveralStatementsRunsThemAll() throws {
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        try db.execute(sql: "CREATE TABLE a (v INTEGER); CREATE TABLE b (v INTEGER);\n INSERT INTO b VALUES (7);  ")
        #expect(try Int64.fetchOne(db, sql: "SELECT v FROM b") == 7)
        #expect(throws: DatabaseError.self) { try Row.fetchOne(db, sql: "SELECT 1; SELECT 2") }
    }

    @Test func argumentsMustMatchTheParameters() throws {
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        let error = #expect(throws: DatabaseError.self) { try db.execute(sql: "SELECT ?, ?", arguments: [1]) }
        #expect(error?.resultCode == SQLITE_RANGE)
        let syntax = #expect(throws: DatabaseError.self) { try db.execute(sql: "SELEKT 1") }
        #expect(syntax?.resultCode == SQLITE_ERROR)
        #expect(syntax?.sql == "SELEKT 1")
    }

    @Test func aThrowingTransactionIsRolledBackAndACompletedOneCommitted() throws {
        struct Refused: Error {}
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        try db.execute(sql: "CREATE TABLE t (v INTEGER)")
        #expect(throws: Refused.self) {
            try db.inTransaction(.immediate) { db in
                try db.execute(sql: "INSERT INTO t VALUES (1)")
                throw Refused()
            }
        }
        #expect(!db.isInsideTransaction)
        try db.inTransaction(.immediate) { db in try db.execute(sql: "INSERT INTO t VALUES (2)") }
        try db.close()
        let reopened = try scratch.open()
        #expect(try Int64.fetchAll(reopened, sql: "SELECT v FROM t") == [2])
    }

    @Test func aWriterWaitsForAnotherConnectionsLockThenGivesUpWithBusy() throws {
        let scratch = ScratchDatabase()
        let first = try scratch.open()
        try first.execute(sql: "PRAGMA journal_mode=WAL")
        try first.execute(sql: "CREATE TABLE t (v INTEGER)")
        let second = try scratch.open()
        try first.execute(sql: "BEGIN IMMEDIATE")
        let error = #expect(throws: DatabaseError.self) {
            try second.inTransaction(.immediate) { db in try db.execute(sql: "INSERT INTO t VALUES (1)") }
        }
        #expect(error?.resultCode == SQLITE_BUSY)
        try first.execute(sql: "COMMIT")
        try second.inTransaction(.immediate) { db in try db.execute(sql: "INSERT INTO t VALUES (1)") }
        #expect(try Int64.fetchOne(first, sql: "SELECT count(*) FROM t") == 1)
    }

    @Test func garbageIsNotADatabaseAtTheFirstStatement() throws {
        let scratch = ScratchDatabase()
        let fd = open(scratch.path, O_WRONLY | O_CREAT, 0o600)
        let garbage = [UInt8]((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        _ = garbage.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let db = try scratch.open()
        let error = #expect(throws: DatabaseError.self) { try db.execute(sql: "PRAGMA journal_mode=WAL") }
        #expect(error?.resultCode == SQLITE_NOTADB)
    }

    @Test func aCachedStatementHoldsNoReadTransactionBetweenCalls() throws {
        let scratch = ScratchDatabase()
        let reader = try scratch.open()
        try reader.execute(sql: "PRAGMA journal_mode=WAL")
        try reader.execute(sql: "CREATE TABLE t (v INTEGER)")
        try reader.execute(sql: "INSERT INTO t VALUES (1), (2)")
        // fetchOne stops after the first of two rows; the statement must still be reset.
        #expect(try Int64.fetchOne(reader, sql: "SELECT v FROM t ORDER BY v") == 1)
        #expect(!reader.isInsideTransaction)
        let writer = try scratch.open()
        try writer.execute(sql: "INSERT INTO t VALUES (0)")
        #expect(try Int64.fetchOne(reader, sql: "SELECT v FROM t ORDER BY v") == 0, "sees the other connection's commit")
        // A checkpoint can only complete when no reader holds an older snapshot.
        let checkpoint = try #require(try Row.fetchOne(writer, sql: "PRAGMA wal_checkpoint(TRUNCATE)"))
        #expect(try checkpoint.decode(Int64.self, forColumn: "busy") == 0)
    }
}

/// `latchkey status`, `log` and `keys list` open the agent's file beside the running agent:
/// a read-only connection never creates a file and cannot write one.
struct ReadOnlyDatabaseTests {
    @Test func aReadOnlyConnectionNeverCreatesTheFile() throws {
        let scratch = ScratchDatabase()
        #expect(throws: DatabaseError.self) {
            let db = try Database(path: scratch.path, busyTimeout: .milliseconds(50), access: .readOnly)
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
        }
        #expect(access(scratch.path, F_OK) != 0, "no file was created")
    }

    @Test func aReadOnlyConnectionReadsButCannotWrite() throws {
        let scratch = ScratchDatabase()
        let writer = try scratch.open()
        try writer.execute(sql: "CREATE TABLE t (i INTEGER)")
        try writer.execute(sql: "INSERT INTO t VALUES (7)")
        let reader = try Database(path: scratch.path, busyTimeout: .milliseconds(50), access: .readOnly)
        #expect(try Int.fetchOne(reader, sql: "SELECT i FROM t") == 7)
        #expect {
            try reader.execute(sql: "INSERT INTO t VALUES (8)")
        } throws: { error in (error as? DatabaseError)?.resultCode == SQLITE_READONLY }
        #expect(try Int.fetchOne(writer, sql: "SELECT count(*) FROM t") == 1)
    }
}
