import Foundation
@testable import LatchkeyLock
import LatchkeySecurity
import LatchkeySim
import LatchkeySimDisk
@testable import LatchkeyStore
import LatchkeyTransport
import Testing

/// The store's promises attacked through a disk that fails (`SimulatedDisk`): a power cut,
/// a full disk, an I/O error or a read-only file system at every write and every sync of
/// the lock's commands, one run per point, each from the same seed. A failure names the
/// seed and the point; `LATCHKEY_DISK_SEED=<n>` replays a seed, `LATCHKEY_DISK_SEEDS=<n>`
/// draws plans from that many.
@Suite struct DiskFaultTests {
    static let seed: UInt64 = ProcessInfo.processInfo.environment["LATCHKEY_DISK_SEED"].flatMap { UInt64($0) }
        ?? 0x5EED_D15C
    /// How many seeds the drawn-plan test runs from `seed` on (`LATCHKEY_DISK_SEEDS`, 40 by default).
    static let seeds: UInt64 = ProcessInfo.processInfo.environment["LATCHKEY_DISK_SEEDS"].flatMap { UInt64($0) } ?? 40

    /// What the commands' caller saw: the decisions and counters `record` said were written.
    struct Outcome: Equatable {
        var recorded: [(id: UInt64, counter: UInt64)] = []
        /// Decisions whose `record` threw.
        var refused: [UInt64] = []
        var failures = 0

        static func == (a: Outcome, b: Outcome) -> Bool {
            a.recorded.map(\.id) == b.recorded.map(\.id) && a.recorded.map(\.counter) == b.recorded.map(\.counter)
                && a.failures == b.failures
        }
    }

    /// One lock's state directory on a simulated disk.
    final class Lock {
        let fixture = StoreFixture()
        let disk: SimulatedDisk
        let loop = ManualEventLoop()
        static let key = PhoneKey(id: 1, name: "alice", secret: [UInt8](repeating: 0x42, count: 32), role: .user)
        /// The key's counter and the highest decision id on disk before the commands.
        static let firstCounter: UInt64 = 10
        static let firstDecision: UInt64 = 1

        init(seed: UInt64) {
            disk = SimulatedDisk(seed: seed)
            fixture.fileSystem = .system.through(sqliteVFS: disk.vfsName)
        }

        func open() throws(StoreError) -> AgentStore { try fixture.open() }

        /// The store as the commands find it: a key whose counter is `firstCounter`, and a
        /// completed lock decision.
        func setUp() throws {
            let store = try open()
            try store.keyStore().add(Self.key)
            try store.keyStore().recordCounter(Self.firstCounter, keyID: Self.key.id)
            let records = try store.lockRecords(loop: loop)
            try records.record(fixture.decision(Self.firstDecision, .lock))
            try records.complete(DecisionID(Self.firstDecision), outcome: .succeeded)
            try records.append(Self.event(Self.firstDecision, loop.now))
            try store.close()
        }

        static func event(_ id: UInt64, _ time: Instant) -> LockEvent {
            LockEvent(kind: .lockOperation(LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(key.id),
                                                               decision: DecisionID(id))),
                      time: time, lockStateBefore: .locked, lockStateAfter: .unlocked, doorState: .closed)
        }

        /// What an agent does for `commands` unlock commands, then a clean stop: per command,
        /// the counter staged and the decision recorded in one commit (what stands before the
        /// motor), then its completion and event in another; the stop closes the store (its
        /// checkpoint copies the WAL into the database file). Errors are the caller's view:
        /// a failed record is a command the lock refuses, and the process goes on until the
        /// disk kills it.
        func run(commands: Int) -> Outcome {
            var outcome = Outcome()
            do {
                let store = try open()
                let records = try store.lockRecords(loop: loop)
                for n in 1...UInt64(commands) {
                    let id = Self.firstDecision + n, counter = Self.firstCounter + n
                    fixture.clocks.advance(by: .seconds(1))
                    do {
                        try records.commandKeys.stageCounter(counter, keyID: Self.key.id)
                        try records.record(fixture.decision(id, .unlock, who: KeyID(Self.key.id)))
                        outcome.recorded.append((id, counter))
                    } catch {
                        outcome.refused.append(id)
                        outcome.failures += 1
                        continue
                    }
                    do {
                        try records.complete(DecisionID(id), outcome: .succeeded)
                        try records.append(Self.event(id, loop.now))
                    } catch {
                        outcome.failures += 1
                    }
                    loop.run()
                }
                try store.close()
            } catch {
                outcome.failures += 1
            }
            return outcome
        }

        /// After a crash: every connection is gone (the caller dropped them), the disk comes
        /// back, and the next start opens the store — its integrity checked — and reads it.
        func restartAndRead() throws -> (decisions: [UInt64], counter: UInt64, highest: UInt64?) {
            try disk.restart()
            let store = try open()
            try store.checkIntegrity()
            let journal = fixture.journal(store)
            return (try journal.entries().map(\.decision.id.rawValue), store.keyStore().lastCounter(keyID: Self.key.id),
                    try journal.lastDecisionID()?.rawValue)
        }
    }

    /// The writes and syncs the scenario makes after set-up, from a run without faults.
    static func span(commands: Int) throws -> (writes: ClosedRange<Int>, syncs: ClosedRange<Int>) {
        let lock = Lock(seed: seed)
        try lock.setUp()
        let before = (lock.disk.writes, lock.disk.syncs)
        let outcome = lock.run(commands: commands)
        #expect(outcome.failures == 0 && outcome.recorded.count == commands, "the run without faults succeeds")
        return ((before.0 + 1)...lock.disk.writes, (before.1 + 1)...lock.disk.syncs)
    }

    static func triggers(commands: Int) throws -> [DiskTrigger] {
        let span = try span(commands: commands)
        return span.writes.map(DiskTrigger.write) + span.syncs.map(DiskTrigger.sync)
    }

    /// The next process after a crash: the store reopens (its integrity checked), every
    /// decision `record` said was written is there, and neither the key's counter nor the
    /// highest decision id is below what was committed. Returns what it read.
    static func restartKeepsWhatWasCommitted(_ lock: Lock, _ outcome: Outcome, _ point: String)
        -> (decisions: [UInt64], counter: UInt64, highest: UInt64?)? {
        let after: (decisions: [UInt64], counter: UInt64, highest: UInt64?)
        do { after = try lock.restartAndRead() } catch {
            Issue.record("\(point): the store does not reopen: \(error)")
            return nil
        }
        for (id, _) in outcome.recorded {
            #expect(after.decisions.contains(id), "\(point): decision \(id) was recorded before the crash and is gone")
        }
        let committedCounter = outcome.recorded.map(\.counter).max() ?? Lock.firstCounter
        #expect(after.counter >= committedCounter, "\(point): the counter went back to \(after.counter)")
        let committedID = outcome.recorded.map(\.id).max() ?? Lock.firstDecision
        #expect((after.highest ?? 0) >= committedID, "\(point): the highest decision id went back")
        return after
    }

    // MARK: Power cuts

    /// A power cut (or, weaker, the process killed) at every write and every sync of two
    /// commands and the stop: after the restart the store opens and passes its integrity
    /// check; every decision `record` said was written is there; the key's counter and the
    /// highest decision id are never below what was committed before the crash.
    @Test(arguments: [DiskFault.powerCut, .processKill])
    func aCrashAtAnyWriteOrSyncLosesNothingThatWasCommitted(crash: DiskFault) throws {
        let triggers = try Self.triggers(commands: 2)
        #expect(triggers.count > 10, "the commands write and sync: \(triggers.count) points")
        var cuts = PowerCutReport()
        for trigger in triggers {
            let point = "seed \(Self.seed), \(crash) at \(trigger)"
            let lock = Lock(seed: Self.seed)
            try lock.setUp()
            lock.disk.schedule(crash, at: trigger)
            let outcome = lock.run(commands: 2)
            #expect(lock.disk.fired.count == 1, "\(point): the crash happened")
            if crash == .powerCut {
                let report = try #require(lock.disk.lastCut, "\(point)")
                cuts.lost += report.lost
                cuts.written += report.written
                cuts.torn += report.torn
            }
            _ = Self.restartKeepsWhatWasCommitted(lock, outcome, point)
        }
        // The draws did what they are for: some unsynced writes were lost, some torn.
        if crash == .powerCut { #expect(cuts.lost > 0 && cuts.torn > 0, "seed \(Self.seed): \(cuts)") }
    }

    /// What the disk counts, for the command path's budget: once the WAL has begun, a
    /// decision with its counter is one sync, and its completion with its event another.
    @Test func aDecisionAndItsCompletionAreOneSyncEach() throws {
        let lock = Lock(seed: Self.seed)
        try lock.setUp()
        let store = try lock.open()
        let records = try store.lockRecords(loop: lock.loop)
        let walSyncsBefore = lock.disk.syncsByFile[lock.fixture.path + "-wal"] ?? 0
        let databaseSyncsBefore = lock.disk.syncsByFile[lock.fixture.path]
        var syncs: [Int] = []
        for n in 1...UInt64(3) {
            let id = Lock.firstDecision + n
            let before = lock.disk.syncs
            try records.commandKeys.stageCounter(Lock.firstCounter + n, keyID: Lock.key.id)
            try records.record(lock.fixture.decision(id, .unlock))
            let recorded = lock.disk.syncs
            try records.complete(DecisionID(id), outcome: .succeeded)
            try records.append(Lock.event(id, lock.loop.now))
            syncs += [recorded - before, lock.disk.syncs - recorded]
        }
        // The first commit after the open starts a new WAL and syncs its header as well.
        #expect(syncs == [2, 1, 1, 1, 1, 1], "syncs per commit: \(syncs)")
        let database = lock.fixture.path
        #expect(lock.disk.syncsByFile[database + "-wal"] == walSyncsBefore + syncs.reduce(0, +), "all of the WAL")
        #expect(lock.disk.syncsByFile[database] == databaseSyncsBefore, "none of the database file")
    }

    /// The card goes read-only at the sync of an unlock's record and stays so; the lock is
    /// killed and restarted a second later, inside the unlock's window, on the read-only card
    /// (`AgentStore.openForAgent` opens it read-only). The refused unlock is back in the
    /// journal (the page cache kept its frames), and the lock does not carry it out.
    @Test func aLockRestartedOnTheReadOnlyCardDoesNotResumeTheUnlockItRefused() throws {
        typealias LockProcess = LockRecoveryFromStoreTests.LockProcess
        let unlock = LockCommand(.unlock, source: .remote, who: KeyID(7))
        let dry = Lock(seed: Self.seed)
        let process = try LockProcess(dry.fixture)
        process.loop.advance(by: .seconds(2))
        process.controller.submit(unlock)
        process.loop.run()
        #expect(process.driving.unlock, "without a fault the motor runs")
        let commitSync = DiskTrigger.sync(dry.disk.syncs)
        let point = "seed \(Self.seed), read-only at \(commitSync)"

        let lock = Lock(seed: Self.seed)
        lock.fixture.fileSystem = StoreFileSystem.readOnly(while: { [disk = lock.disk] in disk.isReadOnly })
            .through(sqliteVFS: lock.disk.vfsName)
        do {
            let first = try LockProcess(lock.fixture)
            first.loop.advance(by: .seconds(2))
            lock.disk.schedule(.readOnly, at: commitSync)
            first.controller.submit(unlock)
            first.loop.run()
            #expect(lock.disk.fired.count == 1 && !first.driving.unlock, "\(point): refused, the motor idle")
            lock.disk.killProcess()
        }
        try lock.disk.restart()
        lock.fixture.clocks.advance(by: .seconds(1))
        let second = try LockProcess(lock.fixture) { fixture in
            try AgentStore.openForAgent(directory: fixture.scratch.state, fileName: StoreFixture.fileName,
                                        wallClock: fixture.clocks.wall, fileSystem: fixture.fileSystem)
        }
        #expect(second.store.isReadOnly, "\(point)")
        #expect(try second.journal.entries().last?.decision.operation == .unlock,
                "\(point): the refused unlock is on the card as the restarted lock reads it")
        second.loop.advance(by: .seconds(10))
        #expect(!second.driving.unlock && second.controller.lockState != .unlocked,
                "\(point): the restarted lock carried out the unlock it had refused")
    }

    /// Three faults of any kind drawn from each of `seeds` seeds over three commands and the stop,
    /// the disk healed and the next process started after them: the store opens and passes
    /// its integrity check, nothing committed is lost or goes back, and a decision whose
    /// record threw is on disk only where the process died (a cut, a kill) before it could be
    /// superseded, or the card went read-only.
    @Test func faultsDrawnFromSeedsBreakNoPromise() throws {
        let span = try Self.span(commands: 3)
        var fired: [DiskFault: Int] = [:]
        for n in 0..<Self.seeds {
            let seed = Self.seed &+ n
            let plan = DiskFaultPlan.drawn(seed: seed, count: 3, writes: span.writes, syncs: span.syncs)
            let point = "seed \(seed), plan \(plan.faults.map { "\($0.1) at \($0.0)" })"
            let lock = Lock(seed: seed)
            try lock.setUp()
            lock.disk.schedule(plan)
            let outcome = lock.run(commands: 3)
            for (_, fault) in lock.disk.fired { fired[fault, default: 0] += 1 }
            if lock.disk.state == .running { lock.disk.killProcess() }
            lock.disk.cancelScheduledFaults()
            lock.disk.makeRoom()
            lock.disk.remountReadWrite()
            guard let after = Self.restartKeepsWhatWasCommitted(lock, outcome, point) else { continue }
            let died = lock.disk.fired.contains { [.powerCut, .processKill, .readOnly].contains($0.1) }
            for id in outcome.refused where !died {
                #expect(!after.decisions.contains(id), "\(point): decision \(id) was refused and is on disk")
            }
        }
        #expect(fired.count == DiskFault.allCases.count, "every kind fired in some run: \(fired)")
    }

    /// The same seed and the same cut: the same operations, the same fates, the same store.
    @Test func theSameSeedGivesTheSameFaultsAndTheSameOutcome() throws {
        let triggers = try Self.triggers(commands: 2)
        let trigger = triggers[triggers.count * 2 / 3]
        func once() throws -> (UInt64, PowerCutReport?, Outcome, [UInt64], UInt64) {
            let lock = Lock(seed: Self.seed)
            try lock.setUp()
            lock.disk.schedule(.powerCut, at: trigger)
            let outcome = lock.run(commands: 2)
            let hash = lock.disk.traceHash, cut = lock.disk.lastCut
            let after = try lock.restartAndRead()
            return (hash, cut, outcome, after.decisions, after.counter)
        }
        let first = try once(), second = try once()
        #expect(first.0 == second.0, "seed \(Self.seed), \(trigger): the traces differ")
        #expect(first.1 == second.1 && first.2 == second.2 && first.3 == second.3 && first.4 == second.4,
                "seed \(Self.seed), \(trigger): \(first) then \(second)")
    }

    // MARK: Refused writes

    /// The same faults under the lock itself: at any write or sync of an unlock's record, the
    /// unlock line never rises, and the lock killed then and restarted a second later (inside
    /// the unlock's 5 s window, where an interrupted unlock is resumed) does not unlock either.
    @Test(arguments: [DiskFault.diskFull, .ioError, .readOnly])
    func theUnlockLineNeverRisesForADecisionWhoseCommitFailed(fault: DiskFault) throws {
        typealias LockProcess = LockRecoveryFromStoreTests.LockProcess
        func locked(_ lock: Lock) throws -> LockProcess {
            let process = try LockProcess(lock.fixture)
            process.loop.advance(by: .seconds(2))
            #expect(process.controller.lockState == .locked)
            return process
        }
        let unlock = LockCommand(.unlock, source: .remote, who: KeyID(7))
        // The unlock's points, from a run without faults.
        let dry = Lock(seed: Self.seed)
        let process = try locked(dry)
        let before = (dry.disk.writes, dry.disk.syncs)
        process.controller.submit(unlock)
        process.loop.run()
        #expect(process.driving.unlock, "without a fault the motor runs")
        let triggers = ((before.0 + 1)...dry.disk.writes).map(DiskTrigger.write)
            + ((before.1 + 1)...dry.disk.syncs).map(DiskTrigger.sync)
        let commitSync = DiskTrigger.sync(dry.disk.syncs)

        for trigger in triggers {
            let point = "seed \(Self.seed), \(fault) at \(trigger)"
            let lock = Lock(seed: Self.seed)
            do {
                let first = try locked(lock)
                lock.disk.schedule(fault, at: trigger)
                first.controller.submit(unlock)
                first.loop.run()
                #expect(lock.disk.fired.count == 1, "\(point): the fault fired")
                #expect(!first.driving.unlock, "\(point): the unlock line rose for a decision that is not on disk")
                lock.disk.killProcess()
            }
            lock.disk.makeRoom()
            lock.disk.remountReadWrite()
            try lock.disk.restart()
            lock.fixture.clocks.advance(by: .seconds(1))
            let second = try LockProcess(lock.fixture)
            #expect(!second.driving.unlock, "\(point): the restarted lock unlocks for a refused command")
            if fault == .readOnly, trigger == commitSync {
                #expect(lock.fixture.refusedCommits.contains(DecisionID(2)), "\(point): the ledger does not remember the refused unlock")
            }
        }
    }

    /// A full disk, an I/O error or a read-only file system at any write or sync of a
    /// decision's commit: `record` throws (so the lock does not move), and the decision is
    /// not on disk when the process dies and the next one starts, with the disk healed —
    /// except a commit whose sync a card gone read-only refused: the page cache keeps it,
    /// and the ledger in the runtime directory keeps it from being resumed.
    @Test(arguments: [DiskFault.diskFull, .ioError, .readOnly])
    func aDecisionWhoseCommitFailedIsNotOnDisk(fault: DiskFault) throws {
        // The points of the first command's decision commit only.
        let lock = Lock(seed: Self.seed)
        try lock.setUp()
        let store = try lock.open()
        let records = try store.lockRecords(loop: lock.loop)
        let before = (lock.disk.writes, lock.disk.syncs)
        try records.commandKeys.stageCounter(Lock.firstCounter + 1, keyID: Lock.key.id)
        try records.record(lock.fixture.decision(Lock.firstDecision + 1, .unlock))
        let triggers = ((before.0 + 1)...lock.disk.writes).map(DiskTrigger.write)
            + ((before.1 + 1)...lock.disk.syncs).map(DiskTrigger.sync)
        #expect(!triggers.isEmpty)
        // The sync of the commit frame (before it, a new WAL's header is synced).
        let commitSync = DiskTrigger.sync(lock.disk.syncs)

        for trigger in triggers {
            let point = "seed \(Self.seed), \(fault) at \(trigger)"
            let lock = Lock(seed: Self.seed)
            try lock.setUp()
            lock.disk.schedule(fault, at: trigger)
            do {
                let store = try lock.open()
                let records = try store.lockRecords(loop: lock.loop)
                try records.commandKeys.stageCounter(Lock.firstCounter + 1, keyID: Lock.key.id)
                #expect(throws: StoreError.self, "\(point): the caller gets the error") {
                    try records.record(lock.fixture.decision(Lock.firstDecision + 1, .unlock))
                }
                #expect(lock.disk.fired.count == 1, "\(point): the fault fired inside the commit")
                #expect(store.failedCommits == 1, "\(point)")
                #expect(store.unsupersededCommits == (fault == .readOnly ? 1 : 0),
                        "\(point): a read-only disk refuses the superseding commit, the others take it")
                // The process dies before anything else is written: the page cache keeps
                // whatever the failed commit left in it.
                lock.disk.killProcess()
            }
            lock.disk.makeRoom()
            lock.disk.remountReadWrite()
            let after = try lock.restartAndRead()
            let check = {
                #expect(!after.decisions.contains(Lock.firstDecision + 1), "\(point): the refused decision is on disk")
                #expect(after.counter == Lock.firstCounter, "\(point): the refused decision's counter is on disk")
            }
            if fault == .readOnly, trigger == commitSync {
                // The commit's frames are written, its sync refused, and so is every write
                // after it: the store cannot supersede them (`AgentStore.supersedeFailedCommit`),
                // and the next process on the same kernel reads them from the page cache.
                // The ledger remembers it, so no process before a reboot resumes it (the counter
                // it carried stays spent, which refuses nothing a phone would send).
                #expect(after.decisions.contains(Lock.firstDecision + 1), "\(point): the page cache kept the commit")
                #expect(lock.fixture.refusedCommits.contains(DecisionID(Lock.firstDecision + 1)),
                        "\(point): the ledger does not remember the refused decision")
                let store = try lock.open()
                let interrupted = try lock.fixture.journal(store).interrupted()
                #expect(interrupted?.id == DecisionID(Lock.firstDecision + 1)
                            && interrupted.map { $0.deadline <= lock.fixture.clocks.monotonic } == true,
                        "\(point): the refused unlock comes back resumable")
            } else {
                check()
            }
        }
    }
}
