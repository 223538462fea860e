import CSQLite
import Foundation
import Glibc
import LatchkeySQLite
import Testing

/// `Database.extendWALFile`: zeros past the WAL's end through SQLite's own handle, only under
/// the write lock, and nothing SQLite reads changes.
struct DatabaseWALTests {
    func walDatabase(_ scratch: ScratchDatabase) throws -> Database {
        let db = try scratch.open()
        #expect(try Row.fetchOne(db, sql: "PRAGMA journal_mode=WAL")?.values.first?.text == "wal")
        try db.execute(sql: "CREATE TABLE t (v INTEGER)")
        return db
    }

    func size(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : -1
    }

    @Test func extendsTheWALWithZerosAndKeepsItsFrames() throws {
        let scratch = ScratchDatabase()
        let db = try walDatabase(scratch)
        try db.execute(sql: "PRAGMA wal_autocheckpoint=0")
        try db.execute(sql: "INSERT INTO t VALUES (7)")
        let before = size(scratch.path + "-wal")
        #expect(before > 0)
        let added = try db.inTransaction(.immediate) { db in
            #expect(try db.walFileSize() == before)
            return try db.extendWALFile(toBytes: 1 << 20)
        }
        #expect(added == (1 << 20) - before)
        #expect(size(scratch.path + "-wal") == 1 << 20)
        #expect(try db.inTransaction(.immediate) { db in try db.extendWALFile(toBytes: 1 << 20) } == 0,
                "already that long")
        try db.execute(sql: "INSERT INTO t VALUES (8)")
        #expect(size(scratch.path + "-wal") == 1 << 20, "the next commit wrote over the zeros")

        // The files as a crash leaves them (no shared-memory index): a new connection must
        // recover the WAL from the file itself: both frames, nothing from the zeros.
        let crashed = ScratchDatabase()
        for suffix in ["", "-wal"] {
            let bytes = try #require(FileManager.default.contents(atPath: scratch.path + suffix))
            #expect(FileManager.default.createFile(atPath: crashed.path + suffix, contents: bytes))
        }
        try db.close()
        let other = try crashed.open()
        #expect(try Int64.fetchAll(other, sql: "SELECT v FROM t ORDER BY v") == [7, 8])
        #expect(try Row.fetchOne(other, sql: "PRAGMA integrity_check")?.values.first?.text == "ok")
    }

    @Test func refusesOutsideATransaction() throws {
        let scratch = ScratchDatabase()
        let db = try walDatabase(scratch)
        #expect { try db.extendWALFile(toBytes: 1 << 20) } throws: { error in
            (error as? DatabaseError)?.resultCode == SQLITE_MISUSE
        }
        #expect(size(scratch.path + "-wal") < 1 << 20)
    }

    @Test func refusesADatabaseWithoutAWAL() throws {
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        try db.execute(sql: "CREATE TABLE t (v INTEGER)")
        #expect { try db.inTransaction(.immediate) { db in try db.extendWALFile(toBytes: 1 << 20) } } throws: { error in
            (error as? DatabaseError)?.message.contains("journal_mode is delete") == true
        }
        #expect(size(scratch.path + "-wal") == -1, "no WAL file made")
    }
}
