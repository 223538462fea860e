import Foundation
import LatchkeyLock
import LatchkeySim
import LatchkeySQLite
@testable import LatchkeyStore
import LatchkeyTransport
import Testing

/// The WAL file has its working size before the first decision is written,
/// so no commit in front of the motor waits for the file system to make the file longer
/// (docs/PERFORMANCE.md, "Under load"); and laying it out loses nothing and never takes a card's last space.
@Suite struct WALLayoutTests {
    struct FileFacts: Equatable, CustomStringConvertible {
        var size: Int64
        /// Bytes of blocks actually allocated: a hole or nothing written has none.
        var allocated: Int64
        var description: String { "\(size) octets, \(allocated) allocated" }
    }

    static func facts(_ path: String) throws -> FileFacts {
        var info = stat()
        guard stat(path, &info) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        return FileFacts(size: Int64(info.st_size), allocated: Int64(info.st_blocks) * 512)
    }

    @Test func aNewStoresWALHasItsWorkingSizeInWrittenBlocksBeforeAnyDecision() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        #expect(store.walNotPrepared == nil)
        let wal = try Self.facts(fixture.path + "-wal")
        #expect(wal.size == AgentStore.walWorkingSize)
        // Written, not a hole or a reservation: ext4's fallocated blocks are "unwritten", and
        // the first write to one changes metadata again.
        #expect(wal.allocated >= wal.size, "\(wal)")
    }

    @Test func decisionsOverwriteTheWALInPlaceFromTheFirstOne() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let journal = fixture.journal(store)
        let laidOut = try Self.facts(fixture.path + "-wal")
        // 150 decisions with their completions: ~750 frames, short of SQLite's checkpoint at
        // 1,000, so without the layout each of these commits made the file longer.
        for id in UInt64(1)...150 {
            try journal.record(fixture.decision(id, id % 2 == 0 ? .lock : .unlock))
            #expect(try Self.facts(fixture.path + "-wal") == laidOut, "decision \(id) grew the WAL")
            try journal.complete(DecisionID(id), outcome: .succeeded)
        }
        #expect(try Self.facts(fixture.path + "-wal") == laidOut)
        #expect(try journal.lastDecisionID() == DecisionID(150))
    }

    @Test func aCleanCloseEmptiesTheWALAndTheNextOpenLaysItOutAgain() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try fixture.journal(store).record(fixture.decision(1, .unlock))
        try store.close()
        // SQLite truncates a persistent WAL to nothing at the last close when
        // journal_size_limit is set: why the layout happens at every open, not once.
        #expect(try Self.facts(fixture.path + "-wal").size == 0)
        let reopened = try fixture.open()
        #expect(try Self.facts(fixture.path + "-wal").size == AgentStore.walWorkingSize)
        #expect(try fixture.journal(reopened).interrupted()?.id == DecisionID(1))
    }

    /// A lock killed mid-run leaves a short WAL whose frames the database file does not hold
    /// yet. The layout writes zeros past them only: the next open still reads them.
    @Test func framesACrashLeftInAShortWALAreKeptWhenItIsLaidOut() throws {
        let fixture = StoreFixture()
        let first = try fixture.open()
        try fixture.journal(first).record(fixture.decision(1, .unlock))
        try first.close()  // everything in the database file; the WAL empty

        // A writer that never checkpoints, copied as it stands (the files a power cut leaves).
        let writer = try Database(path: fixture.path, busyTimeout: .seconds(1))
        try writer.execute(sql: "PRAGMA wal_autocheckpoint=0")
        try writer.execute(sql: "INSERT INTO meta (name, value) VALUES ('marker', 42)")
        let crashed = ScratchDirectory()
        try FileManager.default.createDirectory(atPath: crashed.state, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: fixture.path + suffix, toPath: crashed.state + "/lock.db" + suffix)
        }
        try writer.close()
        let short = try Self.facts(crashed.state + "/lock.db-wal").size
        #expect(short > 0 && short < 64 * 1024, "the crash left a short WAL with frames: \(short) octets")

        let marker = { (store: AgentStore) throws -> Int64? in
            try store.read { db in try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'marker'") }
        }
        let reopened = try AgentStore(directory: crashed.state, fileName: "lock.db")
        #expect(try Self.facts(crashed.state + "/lock.db-wal").size == AgentStore.walWorkingSize)
        #expect(try marker(reopened) == 42, "the frame the crash left was read")
        #expect(try reopened.decisionJournal(monotonicNow: { .zero }).interrupted()?.id == DecisionID(1))
        try reopened.close()
        #expect(try marker(try AgentStore(directory: crashed.state, fileName: "lock.db")) == 42,
                "and checkpointed into the database file at the close")
    }

    @Test func aNearlyFullFileSystemKeepsItsSpaceAndTheStoreWorksAndSaysWhy() throws {
        let fixture = StoreFixture()
        let free = AgentStore.walWorkingSize + 1024 * 1024  // less than the layout plus what it must leave
        let store = try AgentStore(directory: fixture.scratch.state, fileName: StoreFixture.fileName,
                                   wallClock: fixture.clocks.wall, fileSystem: .nearlyFull(free))
        let why = try #require(store.walNotPrepared)
        #expect(why.contains("\(free) bytes free"), "\(why)")
        #expect(try Self.facts(fixture.path + "-wal").size < AgentStore.walWorkingSize)
        let journal = fixture.journal(store)
        try journal.record(fixture.decision(1, .unlock))
        #expect(try journal.interrupted()?.id == DecisionID(1))

        // With room again, the next open lays it out and says nothing.
        let roomy = try fixture.open()
        #expect(roomy.walNotPrepared == nil)
        #expect(try Self.facts(fixture.path + "-wal").size == AgentStore.walWorkingSize)
    }

    @Test func aReadOnlyOpenLaysNothingOut() throws {
        let fixture = StoreFixture()
        try fixture.open().close()
        let reader = try AgentStore(directory: fixture.scratch.state, fileName: StoreFixture.fileName, access: .readOnly)
        #expect(reader.walNotPrepared == nil)
        #expect(try Self.facts(fixture.path + "-wal").size == 0)
    }
}

/// SQLite checkpoints the WAL inside the commit that crosses 1,000 frames.
/// The lock's store hands that checkpoint to its loop's next turn instead
/// (`AgentStore.checkpointScheduler`), so none runs between a decision's record and the drive.
@Suite struct CheckpointPlacementTests {
    static func databaseSize(_ fixture: StoreFixture) throws -> Int64 {
        try WALLayoutTests.facts(fixture.path).size
    }

    @Test func aRecordThatCrossesTheThresholdIsCheckpointedOnTheLoopsNextTurnNotBefore() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let loop = ManualEventLoop()
        store.checkpointScheduler = { loop.execute($0) }
        let log = store.eventLog()
        let journal = fixture.journal(store)
        // Fill the WAL to just under the threshold (events: new rows, so a checkpoint makes
        // the database file longer).
        var sequence = 0
        while store.connection.walFrames < AgentStore.checkpointFrames - 8 {
            sequence += 1
            try #require(sequence < 2 * AgentStore.checkpointFrames, "the store counts no WAL frames")
            try log.append(LockEvent(kind: .doorStateChange(.open), time: Instant(nanoseconds: Int64(sequence)),
                                     lockStateBefore: .locked, lockStateAfter: .locked, doorState: .open))
        }
        let before = try Self.databaseSize(fixture)
        var id: UInt64 = 0
        while store.connection.walFrames < AgentStore.checkpointFrames {
            id += 1
            try #require(id < 100, "the store counts no WAL frames")
            try journal.record(fixture.decision(id, .unlock))
            #expect(try Self.databaseSize(fixture) == before, "record \(id) ran a checkpoint before the drive")
        }
        // More writes in the same turn (a completion, an event) leave it for the turn too.
        try journal.complete(DecisionID(id), outcome: .succeeded)
        #expect(try Self.databaseSize(fixture) == before)
        loop.run()
        #expect(try Self.databaseSize(fixture) > before, "the next turn ran the checkpoint")
        // and the next commit starts the WAL from its beginning, over the laid-out blocks.
        try journal.record(fixture.decision(id + 1, .lock))
        #expect(store.connection.walFrames < 10)
        #expect(try WALLayoutTests.facts(fixture.path + "-wal").size == AgentStore.walWorkingSize)
        #expect(store.walStatus == "laid_out")
    }

    @Test func withoutASchedulerTheWriteThatMadeItDueCheckpoints() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let log = store.eventLog()
        let before = try Self.databaseSize(fixture)  // only a checkpoint writes the database file
        var sequence = 0
        while store.connection.walFrames < AgentStore.checkpointFrames {
            sequence += 1
            try #require(sequence < 2 * AgentStore.checkpointFrames, "the store counts no WAL frames")
            #expect(try Self.databaseSize(fixture) == before)
            try log.append(LockEvent(kind: .doorStateChange(.open), time: Instant(nanoseconds: Int64(sequence)),
                                     lockStateBefore: .locked, lockStateAfter: .locked, doorState: .open))
        }
        #expect(try Self.databaseSize(fixture) > before, "the write that crossed it ran it")
    }
}
