import Foundation
import LatchkeyLock
@testable import LatchkeyStore
import Testing

/// The "corrupt store" row of the relaunch table: a bad file is named in
/// a typed error, moved aside, and the agent starts from an empty store — in which there is
/// no decision to resume, so the lock stays locked.
@Suite struct StoreCorruptionTests {
    /// Opens the store expecting `.corrupt` about the fixture's file.
    static func expectCorrupt(_ fixture: StoreFixture) throws -> StoreCorruption {
        let error = try #require(throws: StoreError.self) { _ = try fixture.open() }
        guard case .corrupt(let corruption) = error else {
            Issue.record("expected corruption, got \(error)")
            throw error
        }
        #expect(corruption.path == fixture.path)
        #expect("\(error)".contains(fixture.path), "the message names the file")
        return corruption
    }

    /// Quarantines, checks the files moved, and returns a fresh store that works.
    static func quarantineAndReopen(_ corruption: StoreCorruption, _ fixture: StoreFixture) throws -> AgentStore {
        let moved = try corruption.quarantine(wallClock: fixture.clocks.wall)
        #expect(moved == fixture.path + ".corrupt-\(fixture.clocks.wallNanos / 1_000_000_000)")
        #expect(FileManager.default.fileExists(atPath: moved), "kept for a post-mortem")
        #expect(!FileManager.default.fileExists(atPath: fixture.path))
        let fresh = try fixture.open()
        let journal = fixture.journal(fresh)
        #expect(try journal.interrupted() == nil, "nothing to resume: the lock stays locked")
        try journal.record(fixture.decision(1, .lock))
        #expect(try journal.interrupted()?.id == DecisionID(1))
        return fresh
    }

    @Test func garbageIsNotADatabase() throws {
        let fixture = StoreFixture()
        try FileManager.default.createDirectory(atPath: fixture.scratch.state, withIntermediateDirectories: false)
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: fixture.path))

        let corruption = try Self.expectCorrupt(fixture)
        #expect(corruption.reason == .notADatabase)
        let fresh = try Self.quarantineAndReopen(corruption, fixture)
        #expect(try fresh.eventLog().count() == 0)
    }

    @Test func aTruncatedFileIsCorrupt() throws {
        let fixture = StoreFixture()
        let size = try Self.fillAndClose(fixture) * Self.pageSize
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: fixture.path))
        try handle.truncate(atOffset: UInt64(size / 2))
        try handle.close()

        let corruption = try Self.expectCorrupt(fixture)
        _ = try Self.quarantineAndReopen(corruption, fixture)
    }

    @Test func aDamagedPageIsFoundByTheIntegrityCheckAtOpen() throws {
        let fixture = StoreFixture()
        let pages = try Self.fillAndClose(fixture)
        // Page headers of the log's leaves: the schema still reads, only a full check sees it.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: fixture.path))
        try handle.seek(toOffset: UInt64((pages - 2) * Self.pageSize))
        try handle.write(contentsOf: Data(repeating: 0xFF, count: 8))
        try handle.close()

        let corruption = try Self.expectCorrupt(fixture)
        #expect(corruption.reason == .integrityCheckFailed)
        _ = try Self.quarantineAndReopen(corruption, fixture)
    }

    /// SQLite's default page size.
    static let pageSize = 4096

    /// Writes 800 log entries and closes the store (which checkpoints the WAL into the
    /// file); returns the file's page count.
    static func fillAndClose(_ fixture: StoreFixture) throws -> Int {
        let store = try fixture.open()
        let log = store.eventLog()
        for index in 1...800 { try log.append(StoredEventLogTests.event(index)) }
        try store.close()
        let size = try #require(FileManager.default.attributesOfItem(atPath: fixture.path)[.size] as? Int)
        #expect(size % pageSize == 0 && size / pageSize > 8, "several pages of \(pageSize) bytes")
        return size / pageSize
    }

    @Test func aTornWriteAtTheWALTailLosesOnlyTheUnfinishedCommit() throws {
        let fixture = StoreFixture()
        let live = try fixture.open()
        let journal = fixture.journal(live)
        try journal.record(fixture.decision(1, .lock))
        try journal.complete(DecisionID(1), outcome: .succeeded)
        try journal.record(fixture.decision(2, .unlock))
        try journal.record(fixture.decision(3, .lock))  // the power fails while this one is written

        // The disk as the power cut left it: the file and its WAL, the WAL's last frame torn.
        let copy = ScratchDirectory()
        let copyState = copy.state
        try FileManager.default.createDirectory(atPath: copyState, withIntermediateDirectories: false)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: fixture.path + suffix, toPath: copyState + "/lock.db" + suffix)
        }
        let wal = copyState + "/lock.db-wal"
        // The last frame's end, not the file's: the store lays its WAL out in advance.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: wal))
        try handle.truncate(atOffset: UInt64(live.walEnd - 100))
        try handle.close()

        let recovered = try AgentStore(directory: copyState, fileName: "lock.db", wallClock: fixture.clocks.wall)
        let recoveredJournal = recovered.decisionJournal(monotonicNow: { fixture.clocks.monotonic })
        #expect(try recoveredJournal.interrupted()?.id == DecisionID(2), "the last good state")
        #expect(try recoveredJournal.outcome(of: DecisionID(1)) == .succeeded)
        #expect(try recoveredJournal.lastDecisionID() == DecisionID(2))
    }

    @Test func aStoreFromANewerVersionIsRefusedNotQuarantined() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v9: from the future')")
        }
        try store.close()
        let error = try #require(throws: StoreError.self) { _ = try fixture.open() }
        guard case .newerSchema(let path, let unknown) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(path == fixture.path && unknown == ["v9: from the future"])
        #expect(FileManager.default.fileExists(atPath: fixture.path))
    }
}
