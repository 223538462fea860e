import LatchkeyLock
import LatchkeyStore
import LatchkeyTransport
import Testing

/// The journal keeps what a crashed lock was doing: reopening the file — without
/// closing the first connection, as after a SIGKILL — hands back the open decision.
@Suite struct StoredDecisionJournalTests {
    @Test func anOpenDecisionComesBackAfterReopen() throws {
        let fixture = StoreFixture()
        let first = try fixture.open()
        let recorded = fixture.decision(3, .lock, who: KeyID(9), relockAfter: .seconds(90))
        try fixture.journal(first).record(recorded)

        let reopened = fixture.journal(try fixture.open())
        let interrupted = try #require(try reopened.interrupted())
        #expect(interrupted.id == DecisionID(3))
        #expect(interrupted.operation == .lock)
        #expect(interrupted.source == .remote)
        #expect(interrupted.who == KeyID(9))
        #expect(interrupted.relockAfter == .seconds(90))
        #expect(interrupted == recorded, "same process, no time passed: the instants are unchanged")
    }

    @Test func theLatestOpenDecisionIsTheInterruptedOne() throws {
        let fixture = StoreFixture()
        let journal = fixture.journal(try fixture.open())
        try journal.record(fixture.decision(1, .unlock))
        try journal.record(fixture.decision(2, .lock))
        try journal.complete(DecisionID(2), outcome: .succeeded)
        #expect(try journal.interrupted()?.id == DecisionID(1), "the newest decision still open")
        try journal.record(fixture.decision(3, .lock))
        #expect(try journal.interrupted()?.id == DecisionID(3))
    }

    @Test func completingClearsTheInterruptedDecision() throws {
        let fixture = StoreFixture()
        let journal = fixture.journal(try fixture.open())
        try journal.record(fixture.decision(1, .unlock))
        try journal.complete(DecisionID(1), outcome: .jammed)

        let reopened = fixture.journal(try fixture.open())
        #expect(try reopened.interrupted() == nil)
        #expect(try reopened.outcome(of: DecisionID(1)) == .jammed)
    }

    @Test func aDecisionIsCompletedOnce() throws {
        let fixture = StoreFixture()
        let journal = fixture.journal(try fixture.open())
        try journal.record(fixture.decision(1, .unlock))
        try journal.complete(DecisionID(1), outcome: .succeeded)
        #expect(throws: StoreError.self) { try journal.complete(DecisionID(1), outcome: .abandoned) }
        #expect(throws: StoreError.self) { try journal.complete(DecisionID(2), outcome: .succeeded) }
        #expect(try journal.outcome(of: DecisionID(1)) == .succeeded)
    }

    @Test func idsContinueAfterReopenAndNeverRepeat() throws {
        let fixture = StoreFixture()
        let journal = fixture.journal(try fixture.open())
        #expect(try journal.lastDecisionID() == nil)
        try journal.record(fixture.decision(41, .lock))
        try journal.complete(DecisionID(41), outcome: .succeeded)

        let reopened = fixture.journal(try fixture.open())
        #expect(try reopened.lastDecisionID() == DecisionID(41))
        #expect(throws: StoreError.self, "an id at or below the highest is refused: the lock must not move") {
            try reopened.record(fixture.decision(41, .unlock))
        }
        #expect(throws: StoreError.self) { try reopened.record(fixture.decision(7, .unlock)) }
        try reopened.record(fixture.decision(42, .unlock))
        #expect(try reopened.lastDecisionID() == DecisionID(42))
    }

    @Test func theHighestIdOutlivesRetention() throws {
        let fixture = StoreFixture()
        let journal = try fixture.journal(retention: 2)
        for id in UInt64(1)...5 {
            try journal.record(fixture.decision(id, .lock))
            try journal.complete(DecisionID(id), outcome: .succeeded)
        }
        #expect(try journal.count() == 2, "completed decisions beyond the newest 2 are gone")
        #expect(try journal.outcome(of: DecisionID(1)) == nil)
        #expect(try journal.outcome(of: DecisionID(5)) == .succeeded)
        #expect(try journal.lastDecisionID() == DecisionID(5))
    }

    @Test func retentionNeverRemovesAnOpenDecision() throws {
        let fixture = StoreFixture()
        let journal = try fixture.journal(retention: 1)
        try journal.record(fixture.decision(1, .unlock))  // left open: complete failed, say
        for id in UInt64(2)...4 {
            try journal.record(fixture.decision(id, .lock))
            try journal.complete(DecisionID(id), outcome: .succeeded)
        }
        #expect(try journal.interrupted()?.id == DecisionID(1))
    }

    @Test func aClosedStoreRefusesToRecord() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let journal = fixture.journal(store)
        try store.close()
        #expect(throws: StoreError.self, "a failed record keeps the lock still") {
            try journal.record(fixture.decision(1, .unlock))
        }
    }
}

extension StoreFixture {
    func journal(retention: Int) throws -> StoredDecisionJournal {
        try open().decisionJournal(monotonicNow: { [unowned self] in clocks.monotonic }, retention: retention)
    }
}
