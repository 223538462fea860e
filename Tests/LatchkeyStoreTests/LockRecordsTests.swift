import LatchkeyLock
import LatchkeySim
import LatchkeyStore
import LatchkeyTransport
import Testing

/// The journal and the log never disagree after a crash: a decision's completion and the
/// event that reports it are one transaction (`StoredLockRecords`).
@Suite struct LockRecordsTests {
    let fixture = StoreFixture()
    let loop = ManualEventLoop()

    func event(closing id: DecisionID, _ operation: LockOperationType = .unlock) -> LockEvent {
        LockEvent(kind: .lockOperation(LockOperationRecord(operation: operation, source: .remote, decision: id)),
                  time: loop.now, lockStateBefore: .locked, lockStateAfter: .unlocked, doorState: .closed)
    }

    /// What another process (the next start, an auditor) finds on disk.
    func onDisk() throws -> (journal: StoredDecisionJournal, log: StoredEventLog) {
        let store = try fixture.open()
        return (fixture.journal(store), store.eventLog())
    }

    @Test func aCompletionLandsWithItsEvent() throws {
        let records = try fixture.open().lockRecords(loop: loop)
        try records.record(fixture.decision(1, .unlock))
        try records.complete(DecisionID(1), outcome: .succeeded)
        #expect(try onDisk().journal.outcome(of: DecisionID(1)) == nil, "noted, not yet written")
        try records.append(event(closing: DecisionID(1)))
        let disk = try onDisk()
        #expect(try disk.journal.outcome(of: DecisionID(1)) == .succeeded)
        #expect(try disk.log.read(limit: 10).map(\.event.decision) == [DecisionID(1)])
    }

    @Test func aDeathBetweenTheTwoLeavesTheDecisionOpenAndTheLogWithoutItsEvent() throws {
        do {
            let records = try fixture.open().lockRecords(loop: loop)
            try records.record(fixture.decision(1, .unlock))
            try records.complete(DecisionID(1), outcome: .succeeded)
            // SIGKILL: the loop never turns again, the event is never appended.
        }
        let disk = try onDisk()
        #expect(try disk.journal.interrupted()?.id == DecisionID(1), "the next start takes it up again")
        #expect(try disk.log.count() == 0, "and the log does not claim it completed")
    }

    @Test func anyOtherWriteCommitsTheNotedCompletionFirst() throws {
        let records = try fixture.open().lockRecords(loop: loop)
        try records.record(fixture.decision(1, .unlock))
        try records.complete(DecisionID(1), outcome: .succeeded)
        try records.append(LockEvent(kind: .doorStateChange(.open), time: loop.now, lockStateBefore: .unlocked,
                                     lockStateAfter: .unlocked, doorState: .open))
        #expect(try onDisk().journal.outcome(of: DecisionID(1)) == .succeeded)
        try records.complete(DecisionID(1), outcome: .succeeded)
        #expect(throws: StoreError.self, "completed once") { try records.record(fixture.decision(2, .lock)) }
    }

    @Test func theNextTurnOfTheLoopCommitsItAtTheLatest() throws {
        let records = try fixture.open().lockRecords(loop: loop)
        try records.record(fixture.decision(1, .lock))
        try records.complete(DecisionID(1), outcome: .jammed)
        loop.run()
        #expect(try onDisk().journal.outcome(of: DecisionID(1)) == .jammed)
    }

    @Test func entriesReadBackAsRecordedWithTheirOutcomes() throws {
        let records = try fixture.open().lockRecords(loop: loop)
        try records.record(fixture.decision(1, .lock, validity: .seconds(3)))
        try records.complete(DecisionID(1), outcome: .succeeded)
        fixture.clocks.advance(by: .seconds(2))
        try records.record(fixture.decision(2, .unlock))
        let entries = try onDisk().journal.entries()
        #expect(entries.map(\.decision.id) == [DecisionID(1), DecisionID(2)])
        #expect(entries.map(\.outcome) == [.succeeded, nil])
        #expect(entries[1].wall.recorded - entries[0].wall.recorded == Duration.seconds(2).nanoseconds)
        #expect(entries[0].wall.deadline - entries[0].wall.decided == Duration.seconds(3).nanoseconds)
        #expect(try onDisk().journal.entries(after: DecisionID(1)).map(\.decision.id) == [DecisionID(2)])
    }
}
