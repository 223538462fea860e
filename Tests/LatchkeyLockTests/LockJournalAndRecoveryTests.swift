import LatchkeyLock
import LatchkeySim
import LatchkeyTransport
import Testing

/// The decision journal comes before the actuator, and crash recovery follows
/// docs/LOCK-RULES.md: unlocks past their window resolve to locked, lock intents are resumed.
@Suite struct LockJournalAndRecoveryTests {
    /// A rig whose journal is a `ProbeJournal` around the rig's in-memory one.
    static func probedRig() throws -> (LockRig, ProbeJournal) {
        var probe: ProbeJournal?
        let rig = try LockRig(wrapJournal: { inner in
            let journal = ProbeJournal(inner)
            probe = journal
            return journal
        })
        return (rig, try #require(probe))
    }

    @Test func decisionIsRecordedBeforeTheLineMoves() throws {
        let (rig, journal) = try Self.probedRig()
        journal.probe = { [unowned rig] in rig.unlockEnergized }
        rig.start()
        rig.submit(.unlock)
        #expect(journal.lineWhenRecorded == [false], "the line had not moved when record ran")
        #expect(rig.unlockEnergized)
        #expect(rig.journal.outcome(of: DecisionID(1)) == .succeeded)
    }

    /// The agent reports how long the journal took with each command (the disk's share of
    /// command -> actuator): the time on the loop's clock that `record` took, per decision.
    @Test func theRecordsDurationIsMeasuredOnTheLoopsClock() throws {
        let (rig, journal) = try Self.probedRig()
        var took = Duration.milliseconds(3)
        journal.probe = { [unowned rig] in
            rig.loop.advance(by: took)  // the "disk": record returns this much later
            return false
        }
        rig.start()
        rig.submit(.unlock)
        #expect(rig.controller.lastRecordedDecision == DecisionID(1))
        #expect(rig.controller.lastRecordDuration == .milliseconds(3))
        took = .microseconds(250)
        rig.loop.advance(by: .seconds(60))  // unlocked, then relocked: a second decision
        rig.submit(.lock)
        #expect(rig.controller.lastRecordedDecision.map(\.rawValue) ?? 0 >= 2)
        #expect(rig.controller.lastRecordDuration == .microseconds(250))
    }

    @Test func aJournalThatThrowsKeepsTheLineStill() throws {
        let journal = InMemoryDecisionJournal()
        journal.recordFailure = .init("disk full")
        let rig = try LockRig(journal: journal)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(60))
        #expect(!rig.unlockEnergized)
        #expect(rig.state == .locked)
        #expect(rig.errors == [.journalFailed])
        #expect(rig.faults.count == 1)
        #expect(journal.entries.isEmpty)
    }

    /// Locking is safe: with the journal refusing writes the bolt still locks,
    /// and the decision and its outcome are written, in order, once the journal takes
    /// writes again. An unlock in the same state stays refused.
    @Test func aLockMovesWithTheJournalDownAndIsRecordedWhenItReturns() throws {
        let journal = InMemoryDecisionJournal()
        let rig = try LockRig(journal: journal)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(1))
        #expect(rig.state == .unlocked)
        let entriesBefore = journal.entries.count
        journal.recordFailure = .init("No space left on device")
        journal.completeFailure = .init("No space left on device")
        rig.submit(.lock)
        rig.loop.advance(by: .milliseconds(1))
        #expect(rig.state == .locked, "the bolt moved though nothing was written")
        #expect(rig.errors.isEmpty)
        #expect(journal.entries.count == entriesBefore)
        #expect(rig.controller.unwrittenJournalEntries == 2, "the decision and its outcome wait")

        rig.submit(.unlock)
        #expect(rig.state == .locked, "no unlock without a durable record")
        #expect(rig.errors == [.journalFailed])
        #expect(!rig.unlockEnergized)

        // Still failing at the first retry: kept, reported, tried again later.
        let faults = rig.faults.count
        rig.loop.advance(by: .seconds(1))
        #expect(rig.faults.count == faults + 1)
        #expect(rig.controller.unwrittenJournalEntries == 2)

        var caughtUp = false
        rig.controller.onJournalCaughtUp = { caughtUp = true }
        journal.recordFailure = nil
        journal.completeFailure = nil
        rig.loop.advance(by: .seconds(2))
        #expect(caughtUp)
        #expect(rig.controller.unwrittenJournalEntries == 0)
        let lock = try #require(journal.entries.dropFirst(entriesBefore).first)
        guard case .recorded(let decision) = lock else { Issue.record("\(lock)"); return }
        #expect(decision.operation == .lock)
        #expect(journal.outcome(of: decision.id) == .succeeded)
        #expect(journal.interrupted == nil)
    }

    @Test func aFailingCompleteIsReportedNotHidden() throws {
        let journal = InMemoryDecisionJournal()
        journal.completeFailure = .init("fsync failed")
        let rig = try LockRig(journal: journal)
        rig.start()
        rig.submit(.unlock)
        #expect(rig.state == .unlocked)
        #expect(rig.faults.count == 1)
        #expect(journal.interrupted?.id == DecisionID(1), "a restart would treat it as interrupted")
    }

    @Test func interruptedUnlockPastItsDeadlineResolvesToLocked() throws {
        let loop = ManualEventLoop()
        loop.advance(by: .seconds(100))
        let stale = LockDecision(id: DecisionID(41), operation: .unlock, source: .remote, who: KeyID(2),
                                 decidedAt: .zero + .seconds(90), deadline: .zero + .seconds(95))
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, bolt: .between, loop: loop)
        rig.start(recovered: stale)
        #expect(!rig.unlockEnergized, "never finish an unlock nobody decided for now")
        #expect(rig.lockEnergized)
        #expect(rig.state == .locking)
        #expect(rig.journal.outcome(of: DecisionID(41)) == .abandoned)
        #expect(rig.errors == [.interrupted])
        let resolution = try #require(rig.recorded.first)
        #expect(resolution.operation == .lock && resolution.source == .auto)
        #expect(resolution.id == DecisionID(42), "ids continue after the recovered one")
        rig.setBolt(.locked)
        #expect(rig.state == .locked)
    }

    @Test func interruptedUnlockPastItsDeadlineOnAFailSecureLockStaysLocked() throws {
        let loop = ManualEventLoop()
        loop.advance(by: .seconds(10))
        let stale = LockDecision(id: DecisionID(5), operation: .unlock, source: .remote,
                                 decidedAt: .zero, deadline: .zero + .seconds(5))
        let rig = try LockRig(loop: loop)
        rig.start(recovered: stale)
        rig.loop.advance(by: .seconds(60))
        #expect(rig.state == .locked)
        #expect(!rig.unlockEnergized)
        #expect(rig.recorded.isEmpty)
    }

    @Test func interruptedUnlockInsideItsWindowIsResumed() throws {
        let loop = ManualEventLoop()
        loop.advance(by: .seconds(2))
        let fresh = LockDecision(id: DecisionID(9), operation: .unlock, source: .remote, who: KeyID(1),
                                 decidedAt: .zero, deadline: .zero + .seconds(5))
        let rig = try LockRig(loop: loop)
        rig.start(recovered: fresh)
        #expect(rig.state == .unlocked)
        #expect(rig.unlockEnergized)
        #expect(rig.recorded.isEmpty, "the journal already holds it")
        #expect(rig.journal.outcome(of: DecisionID(9)) == .succeeded)
        #expect(rig.operations == [LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(1),
                                                       decision: DecisionID(9), recovered: true)])
    }

    @Test func interruptedUnlockFromAnEarlierBootIsNotResumed() throws {
        // A deadline "ahead" of a clock that restarted at zero must not count as valid.
        let loop = ManualEventLoop()
        loop.advance(by: .seconds(3))
        let earlierBoot = LockDecision(id: DecisionID(9), operation: .unlock, source: .remote,
                                       decidedAt: .zero + .seconds(5000), deadline: .zero + .seconds(5005))
        let rig = try LockRig(loop: loop)
        rig.start(recovered: earlierBoot)
        #expect(rig.state == .locked)
        #expect(!rig.unlockEnergized)
    }

    @Test func interruptedLockIsAlwaysResumed() throws {
        let loop = ManualEventLoop()
        loop.advance(by: .seconds(3600))
        let old = LockDecision(id: DecisionID(3), operation: .lock, source: .remote,
                               decidedAt: .zero, deadline: .zero + .seconds(5))
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, bolt: .unlocked, loop: loop)
        rig.start(recovered: old)
        #expect(rig.state == .locking)
        #expect(rig.lockEnergized)
        #expect(rig.recorded.isEmpty)
        rig.setBolt(.locked)
        #expect(rig.state == .locked)
        #expect(rig.journal.outcome(of: DecisionID(3)) == .succeeded)
    }

    @Test func interruptedLockWithTheDoorOpenLocksWhenItCloses() throws {
        let old = LockDecision(id: DecisionID(3), operation: .lock, source: .auto,
                               decidedAt: .zero, deadline: .zero + .seconds(5))
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, bolt: .unlocked, doorOpen: true)
        rig.start(recovered: old)
        #expect(rig.state == .unlocked)
        #expect(!rig.lockEnergized)
        rig.setDoor(open: false)
        #expect(rig.state == .locking)
        #expect(rig.lockEnergized)
    }

    @Test func crashMidUnlockThenRestartPastTheWindow() throws {
        // First life: the unlock is recorded and the motor runs, then the process dies.
        let loop = ManualEventLoop()
        let journal = InMemoryDecisionJournal()
        do {
            let first = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, journal: journal, loop: loop)
            first.start()
            first.submit(.unlock)
            #expect(first.state == .unlocking)
        }
        loop.advance(by: .seconds(30))
        // Second life: the bolt stopped half way; the journal hands back the unlock.
        let recovered = try #require(journal.interrupted)
        #expect(recovered.operation == .unlock)
        let second = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, journal: journal,
                                 bolt: .between, loop: loop, firstDecisionID: DecisionID(1))
        second.start(recovered: recovered)
        #expect(second.lockEnergized && !second.unlockEnergized)
        second.setBolt(.locked)
        #expect(second.state == .locked)
        #expect(journal.interrupted == nil)
    }

    @Test func noRecoveredDecisionAndMeasuredUnlockedRelocks() throws {
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, bolt: .unlocked)
        rig.start()
        #expect(rig.state == .unlocked)
        rig.loop.advance(by: .seconds(30))
        #expect(rig.state == .locking)
    }

    @Test func commandsBeforeStartAreRefused() throws {
        let rig = try LockRig()
        rig.submit(.unlock)
        #expect(rig.errors == [.notReady])
        #expect(rig.state == .unknown)
        #expect(!rig.unlockEnergized)
        #expect(rig.recorded.isEmpty)
    }
}

/// Records what the actuator line looked like when each decision was recorded.
final class ProbeJournal: DecisionJournal {
    let inner: InMemoryDecisionJournal
    var probe: () -> Bool = { false }
    private(set) var lineWhenRecorded: [Bool] = []

    init(_ inner: InMemoryDecisionJournal) { self.inner = inner }

    func record(_ decision: LockDecision) throws {
        lineWhenRecorded.append(probe())
        try inner.record(decision)
    }

    func complete(_ id: DecisionID, outcome: DecisionOutcome) throws {
        try inner.complete(id, outcome: outcome)
    }
}
