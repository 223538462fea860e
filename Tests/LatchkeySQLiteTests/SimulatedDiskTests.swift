import CSQLite
import Foundation
import LatchkeySQLite
import LatchkeySimDisk
import Testing

/// The simulated disk itself: what it keeps across a power cut is what was synced, and it
/// fails the write or sync it is told to, with the code SQLite's unix VFS would give.
@Suite struct SimulatedDiskTests {
    let directory: String

    init() {
        var template = Array("/tmp/latchkey-disk-test-XXXXXX".utf8CString)
        directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    func open(_ disk: SimulatedDisk, synchronous: String) throws -> Database {
        let db = try Database(path: directory + "/t.db", busyTimeout: .seconds(1), vfs: disk.vfsName)
        try db.execute(sql: "PRAGMA journal_mode=WAL")
        try db.execute(sql: "PRAGMA synchronous=\(synchronous)")
        return db
    }

    /// Commits with and without a sync, then the power fails losing every unsynced write.
    func rowsAfterCut(synchronous: String) throws -> [Int64] {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = SimulatedDisk(seed: 1)
        do {
            let db = try open(disk, synchronous: "FULL")
            try db.execute(sql: "CREATE TABLE t (v INTEGER)")
            try db.execute(sql: "PRAGMA synchronous=\(synchronous)")
            try db.execute(sql: "INSERT INTO t VALUES (1)")
            #expect(try Int64.fetchAll(db, sql: "SELECT v FROM t") == [1], "read back before the cut")
            disk.cutPower(.loseAll)
            #expect(throws: DatabaseError.self, "a dead handle refuses") { try db.execute(sql: "INSERT INTO t VALUES (2)") }
        }
        try disk.restart()
        let db = try open(disk, synchronous: "FULL")
        #expect(try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"])
        return try Int64.fetchAll(db, sql: "SELECT v FROM t")
    }

    @Test func aSyncedCommitSurvivesAPowerCut() throws {
        #expect(try rowsAfterCut(synchronous: "FULL") == [1])
    }

    @Test func controlAnUnsyncedCommitIsLostAtAPowerCut() throws {
        #expect(try rowsAfterCut(synchronous: "OFF") == [], "synchronous=OFF commits without xSync")
    }

    @Test func theChosenWriteAndSyncFailWithSQLitesCodes() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = SimulatedDisk(seed: 1)
        let db = try open(disk, synchronous: "FULL")
        try db.execute(sql: "CREATE TABLE t (v INTEGER)")
        func failure(_ fault: DiskFault, at trigger: DiskTrigger) -> Int32? {
            disk.schedule(fault, at: trigger)
            defer { disk.makeRoom(); disk.remountReadWrite() }
            do { try db.execute(sql: "INSERT INTO t VALUES (1)") } catch let error as DatabaseError {
                return error.extendedResultCode
            } catch { return nil }
            return SQLITE_OK
        }
        #expect(failure(.diskFull, at: .write(disk.writes + 1)) == SQLITE_FULL)
        #expect(failure(.ioError, at: .write(disk.writes + 1)) == SQLITE_IOERR | (3 << 8), "SQLITE_IOERR_WRITE")
        #expect(failure(.ioError, at: .sync(disk.syncs + 1)) == SQLITE_IOERR | (4 << 8), "SQLITE_IOERR_FSYNC")
        #expect(failure(.readOnly, at: .write(disk.writes + 1)) == SQLITE_IOERR | (3 << 8), "SQLITE_IOERR_WRITE")
        let syncs = disk.syncs
        #expect(failure(.ioError, at: .write(disk.writes + 1_000)) == SQLITE_OK, "nothing scheduled here yet")
        #expect(disk.syncs == syncs + 1, "one commit, one sync of the WAL")
        #expect(disk.fired.map(\.1) == [.diskFull, .ioError, .ioError, .readOnly])
    }

    @Test func aDrawnPlanIsItsSeed() {
        let a = DiskFaultPlan.drawn(seed: 7, count: 20, writes: 1...100, syncs: 1...30)
        let b = DiskFaultPlan.drawn(seed: 7, count: 20, writes: 1...100, syncs: 1...30)
        let c = DiskFaultPlan.drawn(seed: 8, count: 20, writes: 1...100, syncs: 1...30)
        #expect(a.faults.map { "\($0.0) \($0.1)" } == b.faults.map { "\($0.0) \($0.1)" })
        #expect(a.faults.map { "\($0.0) \($0.1)" } != c.faults.map { "\($0.0) \($0.1)" })
    }
}
