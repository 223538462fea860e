import Foundation
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeySQLite
@testable import LatchkeyStore
import Testing

/// The commit between an accepted command and the motor writes as few WAL
/// pages as the rules allow (schema v5), and a store an older release wrote keeps its decisions.
@Suite struct DecisionCommitTests {
    static let lastV4Migration = "v4: arrival unlock is an admin's opt-in"
    let key = PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .user)

    /// WAL frames a commit adds: the WAL is cut to nothing first (a checkpoint from a second
    /// connection, as another process could), so what the commit writes is the whole file.
    func walFrames(at path: String, during commit: () throws -> Void) throws -> Int {
        let other = try Database(path: path, busyTimeout: .seconds(1))
        let answer = try #require(try Row.fetchOne(other, sql: "PRAGMA wal_checkpoint(TRUNCATE)"))
        #expect(answer.values.first == .integer(0), "the checkpoint was not blocked")
        let pageSize = try #require(try Int.fetchOne(other, sql: "PRAGMA page_size"))
        try other.close()
        #expect(try fileSize(path + "-wal") == 0)
        try commit()
        let size = try fileSize(path + "-wal")
        let header = 32, frameHeader = 24
        #expect((size - header) % (pageSize + frameHeader) == 0, "\(size) octets are whole frames")
        return (size - header) / (pageSize + frameHeader)
    }

    func fileSize(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    @Test func aCommandsDecisionAndCounterAreThreePages() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.keyStore().add(key)
        let journal = fixture.journal(store)
        for id in UInt64(1)...50 {  // some history: the pages are not the first of their tables
            try journal.record(fixture.decision(id, .lock))
            try journal.complete(DecisionID(id), outcome: .succeeded)
        }
        let records = try store.lockRecords(loop: ManualEventLoop())
        try records.commandKeys.stageCounter(9, keyID: key.id)
        let frames = try walFrames(at: fixture.path) { try records.record(fixture.decision(51, .unlock)) }
        // The decision's row, its entry in the open-decisions index, the key's counter. Schema
        // v4 wrote 7: also sqlite_sequence, the UNIQUE index on id and the highest id in meta.
        #expect(frames == 3)
        #expect(try fixture.journal(try fixture.open()).interrupted()?.id == DecisionID(51))
        #expect(try fixture.open().keyStore().lastCounter(keyID: key.id) == 9)
    }

    @Test func aStoreVersion4WroteKeepsItsDecisionsTheirOrderAndItsHighestID() throws {
        let fixture = StoreFixture()
        try fixture.open().close()  // the state directory, as the store makes it
        for suffix in ["", "-wal", "-shm"] { unlink(fixture.path + suffix) }
        do {
            let db = try Database(path: fixture.path, busyTimeout: .seconds(1))
            try StoreSchema.migrator.prefix(through: Self.lastV4Migration).migrate(db, applied: [])
            // Ids 5 and 6 completed, 7 open; meta as v4 wrote it, with every record.
            for (id, outcome) in [(5, 0), (6, 2), (7, nil)] as [(Int64, Int64?)] {
                try db.execute(sql: """
                    INSERT INTO decision (id, operation, source, who, decidedAtNanos, deadlineNanos,
                                          recordedWallNanos, decidedWallNanos, deadlineWallNanos, outcome)
                    VALUES (?, 1, 0, 7, 1, 2, 3, 4, 5, ?)
                    """, arguments: [id, outcome])
            }
            try db.execute(sql: "INSERT INTO meta (name, value) VALUES ('highestDecisionID', 7)")
            try db.close()
        }
        let store = try fixture.open()
        let journal = fixture.journal(store)
        #expect(try journal.entries().map(\.decision.id) == [DecisionID(5), DecisionID(6), DecisionID(7)])
        #expect(try journal.entries().map(\.outcome) == [.succeeded, .abandoned, nil])
        #expect(try journal.interrupted()?.id == DecisionID(7))
        #expect(try journal.lastDecisionID() == DecisionID(7))
        #expect(throws: StoreError.self, "an id at or below the highest is still refused") {
            try journal.record(fixture.decision(7, .unlock))
        }
        try journal.record(fixture.decision(8, .unlock))
        let leftovers = try store.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_sequence WHERE name = 'decision'")
        }
        #expect(leftovers == 0, "no AUTOINCREMENT counter left behind")
    }

    @Test func theHighestIDSurvivesWhenMetaIsBehindTheRows() throws {
        // v5 writes meta at completion: a crash between a record and its completion leaves
        // meta behind the newest row, which then is the highest.
        let fixture = StoreFixture()
        let journal = fixture.journal(try fixture.open())
        try journal.record(fixture.decision(3, .lock))
        try journal.complete(DecisionID(3), outcome: .succeeded)
        try journal.record(fixture.decision(4, .unlock))  // the process dies here
        let reopened = fixture.journal(try fixture.open())
        #expect(try reopened.lastDecisionID() == DecisionID(4))
        #expect(throws: StoreError.self) { try reopened.record(fixture.decision(4, .lock)) }
    }
}
