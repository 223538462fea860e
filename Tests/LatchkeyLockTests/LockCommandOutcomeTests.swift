@testable import LatchkeyLock
import LatchkeySim
import LatchkeyTransport
import Testing

/// What `LockController.submit` returns is what became of the command: the machine's verdict,
/// the decision the journal holds for it, and the movement, as a value.
@Suite struct LockCommandOutcomeTests {
    let unlock = LockCommand(.unlock, source: .remote, who: KeyID(7))
    let lock = LockCommand(.lock, source: .remote, who: KeyID(7))

    /// The decisions the journal recorded, by id.
    func recorded(_ journal: InMemoryDecisionJournal) -> [DecisionID] {
        journal.entries.compactMap { if case .recorded(let decision) = $0 { decision.id } else { nil } }
    }

    @Test func aDecidedUnlockNamesTheDecisionTheJournalHoldsAndHowLongItTook() throws {
        let (rig, journal) = try LockJournalAndRecoveryTests.probedRig()
        journal.probe = { [unowned rig] in
            rig.loop.advance(by: .milliseconds(3))  // the "disk"
            return false
        }
        rig.start()
        let outcome = rig.controller.submit(unlock)
        guard case .decided(let decided) = outcome else { Issue.record("not decided: \(outcome)"); return }
        #expect(decided.decision != nil)
        #expect(recorded(rig.journal) == [decided.decision].compactMap { $0 })
        #expect(decided.durable == .milliseconds(3))
        #expect(decided.moving, "the actuator reports its end later")
        #expect(decided.failed == nil)
        rig.loop.run()
        #expect(rig.journal.outcome(of: try #require(decided.decision)) == .succeeded)
    }

    @Test func aRefusalNamesTheLocksReasonAndJournalsNothing() throws {
        let rig = try LockRig(mode: .noRemoteLockUnlock)
        rig.start()
        #expect(rig.controller.submit(unlock) == .refused(.restricted))
        #expect(rig.journal.entries.isEmpty)
        #expect(!rig.unlockEnergized)
    }

    @Test func aCommandBeforeStartIsNotReady() throws {
        let rig = try LockRig()
        #expect(rig.controller.submit(unlock) == .refused(.notReady))
        #expect(rig.journal.entries.isEmpty)
    }

    @Test func aLockIntoAnOpenDoorIsRefused() throws {
        let rig = try LockRig(bolt: .unlocked, doorOpen: true)
        rig.start()
        #expect(rig.controller.submit(lock) == .refused(.doorOpen))
        #expect(rig.journal.entries.isEmpty)
    }

    @Test func aBoltAlreadyThereIsDecidedWithoutADecision() throws {
        let rig = try LockRig()
        rig.start()
        #expect(rig.controller.submit(lock) == .decided(DecidedCommand(moving: false)))
        #expect(rig.journal.entries.isEmpty)
    }

    @Test func aCommandWhileTheBoltMovesIsBusy() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        guard case .decided(let first) = rig.controller.submit(unlock), first.moving else {
            Issue.record("the first unlock is not moving"); return
        }
        #expect(rig.controller.submit(unlock) == .refused(.busy))
        #expect(recorded(rig.journal) == [first.decision].compactMap { $0 }, "the second decided nothing")
    }

    @Test func anUnlockTheJournalRefusesIsRefusedAndDoesNotMove() throws {
        let journal = InMemoryDecisionJournal()
        journal.recordFailure = .init("disk full")
        let rig = try LockRig(journal: journal)
        rig.start()
        #expect(rig.controller.submit(unlock) == .refused(.journalFailed))
        #expect(!rig.unlockEnergized)
    }

    @Test func aLockTheJournalRefusesMovesWithoutADecisionOnRecord() throws {
        let journal = InMemoryDecisionJournal()
        let rig = try LockRig(boltSensors: true, journal: journal, bolt: .unlocked)
        rig.start()
        journal.recordFailure = .init("disk full")
        #expect(rig.controller.submit(lock) == .decided(DecidedCommand(moving: true)))
        #expect(recorded(journal).isEmpty)
    }

    /// An attacker who fills the disk gets the journal to refuse a lock (it moves all the same);
    /// an output that cannot be set then leaves the bolt where it was. That lock failed, and
    /// says so: it must not come back as decided and unfailed, which the phone hears as "locked".
    @Test func aLockTheJournalRefusesWhoseMovementFailsAtOnceSaysSo() throws {
        let journal = InMemoryDecisionJournal()
        let rig = try LockRig(boltSensors: true, journal: journal, bolt: .unlocked)
        rig.start()
        journal.recordFailure = .init("disk full")
        rig.chip.failWrites(to: "ACTUATOR")
        guard case .decided(let decided) = rig.controller.submit(lock) else { Issue.record("not decided"); return }
        #expect(decided.failed == .hardwareFault, "the bolt never locked")
        #expect(!decided.moving)
        #expect(rig.state == .notFullyLocked)
    }

    @Test func aMovementThatFailsAtOnceSaysSo() throws {
        let rig = try LockRig()
        rig.start()
        rig.chip.failWrites(to: "ACTUATOR")
        guard case .decided(let decided) = rig.controller.submit(unlock) else { Issue.record("not decided"); return }
        #expect(decided.failed == .hardwareFault)
        #expect(!decided.moving)
        #expect(rig.journal.outcome(of: try #require(decided.decision)) == .hardwareFault)
    }

    @Test func aCommandFromAnEventHandlerIsQueuedBehindTheInputRunning() throws {
        let rig = try LockRig(boltSensors: true, bolt: .unlocked)
        rig.start()
        var inner: CommandOutcome?
        rig.controller.onEvent = { [unowned rig] _ in
            if inner == nil { inner = rig.controller.lockAutomatically(for: nil) }
        }
        rig.setDoor(open: true)  // an event: the door opened
        #expect(inner == .queued)
        #expect(rig.journal.entries.isEmpty, "run after the door's input: a lock into an open door")
    }
}
