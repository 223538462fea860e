import Foundation
@testable import LatchkeyLock
import LatchkeySim
@testable import LatchkeyStore
import LatchkeyTransport
import Testing

/// Power fails while the lock writes. What reaches the disk is the database
/// file and its WAL, with the tail of the WAL torn or garbled; SQLite's frame checksums find
/// the bad tail, the last commit before it is the state used, and the lock does not unlock.
///
/// The decision cut off is an UNLOCK decided one second before the restart: had it
/// survived, the lock would carry it out (its window is 5 s) — the control test shows that
/// — so a lock that stays locked is proof the torn decision was not used.
@Suite struct PowerLossTests {
    typealias LockProcess = LockRecoveryFromStoreTests.LockProcess

    /// The first process: locked (decision 1), then an unlock (decision 2) recorded and the
    /// motor running — and the power fails. Returns where the WAL's frames ended before and
    /// after the unlock's commit (`AgentStore.walEnd`: the file is longer, laid out in
    /// advance), with the process (never closed, like one that lost power).
    static func powerFailsMidUnlock(_ fixture: StoreFixture) throws -> (LockProcess, before: Int, after: Int) {
        let first = try LockProcess(fixture)
        first.loop.advance(by: .seconds(2))
        #expect(first.controller.lockState == .locked)
        let before = first.store.walEnd
        first.controller.submit(LockCommand(.unlock, source: .remote, who: KeyID(7)))
        first.loop.run()
        #expect(first.driving.unlock, "decided, recorded, the motor runs")
        let after = first.store.walEnd
        #expect(after > before, "the unlock's commit is the WAL's tail")
        #expect(try walSize(fixture.path) >= after)
        return (first, before, after)
    }

    /// The disk after the cut: the file and its WAL copied to a new state directory (no
    /// shared memory index: it does not survive a power loss), the WAL changed by `damage`.
    static func disk(after fixture: StoreFixture, damage: (FileHandle) throws -> Void) throws -> StoreFixture {
        let copy = StoreFixture()
        copy.clocks.wallNanos = fixture.clocks.wallNanos
        try FileManager.default.createDirectory(atPath: copy.scratch.state, withIntermediateDirectories: false)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: fixture.path + suffix, toPath: copy.path + suffix)
        }
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: copy.path + "-wal"))
        try damage(handle)
        try handle.close()
        return copy
    }

    static func walSize(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
    }

    /// The restart: a second later, on the damaged disk. Returns the new lock process.
    static func restart(on disk: StoreFixture) throws -> LockProcess {
        disk.clocks.advance(by: .seconds(1))
        return try LockProcess(disk)
    }

    @Test func aTruncatedTailLosesTheUnlockAndTheLockStaysLocked() throws {
        let fixture = StoreFixture()
        let (first, before, after) = try Self.powerFailsMidUnlock(fixture)
        let disk = try Self.disk(after: fixture) { try $0.truncate(atOffset: UInt64(before + (after - before) / 2)) }

        let second = try Self.restart(on: disk)
        #expect(try second.journal.entries().map(\.decision.operation) == [.lock, .lock],
                "the unlock never reached the disk; decision 2 is the lock's own, at start")
        #expect(second.driving == (unlock: false, lock: true), "a motor of unknown position is driven to locked")
        second.loop.advance(by: .seconds(10))
        #expect(second.controller.lockState == .locked)
        #expect(!second.chip.isHigh("UNLOCK"))
        withExtendedLifetime(first) {}
    }

    @Test func aGarbledTailFailsItsChecksumAndTheLockStaysLocked() throws {
        let fixture = StoreFixture()
        let (first, before, after) = try Self.powerFailsMidUnlock(fixture)
        let disk = try Self.disk(after: fixture) { handle in
            // Half-written sectors: the unlock's frames keep their length, not their bytes.
            try handle.seek(toOffset: UInt64(before + (after - before) / 2))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: 64))
        }

        let second = try Self.restart(on: disk)
        #expect(try second.journal.entries().map(\.decision.operation) == [.lock, .lock], "the unlock's frames were refused")
        #expect(try second.journal.outcome(of: DecisionID(1)) == .succeeded, "the last good state")
        #expect(second.driving == (unlock: false, lock: true))
        second.loop.advance(by: .seconds(10))
        #expect(second.controller.lockState == .locked)
        withExtendedLifetime(first) {}
    }

    @Test func controlTheSameCutWithTheTailIntactResumesTheUnlock() throws {
        let fixture = StoreFixture()
        let (first, _, _) = try Self.powerFailsMidUnlock(fixture)
        let disk = try Self.disk(after: fixture) { _ in }

        let second = try Self.restart(on: disk)
        #expect(try second.journal.entries().map(\.decision.operation) == [.lock, .unlock])
        #expect(second.driving == (unlock: true, lock: false), "decided 1 s ago, inside its window: carried out")
        withExtendedLifetime(first) {}
    }

    @Test func aDamagedFileWithAnOpenUnlockIsQuarantinedAndTheLockStaysLocked() throws {
        let fixture = StoreFixture()
        let pages = try StoreCorruptionTests.fillAndClose(fixture)
        do {
            let store = try fixture.open()
            try fixture.journal(store).record(fixture.decision(1, .unlock))
            try store.close()  // checkpointed into the file
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: fixture.path))
        try handle.seek(toOffset: UInt64((pages - 2) * StoreCorruptionTests.pageSize))
        try handle.write(contentsOf: Data(repeating: 0xFF, count: 8))
        try handle.close()

        let corruption = try StoreCorruptionTests.expectCorrupt(fixture)
        try corruption.quarantine(wallClock: fixture.clocks.wall)
        let restarted = try LockProcess(fixture)
        #expect(try restarted.journal.lastDecisionID() == DecisionID(1), "its own lock decision, in the fresh store")
        #expect(restarted.driving == (unlock: false, lock: true))
    }
}
