import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeyStore
import LatchkeyTransport
import Testing

/// A verified command's counter and the decision it leads to are one transaction
/// (`StoredLockRecords+Counters`), without weakening either rule.
@Suite struct CommandCounterCommitTests {
    let fixture = StoreFixture()
    let loop = ManualEventLoop()
    let key = PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .user)

    func records() throws -> StoredLockRecords {
        let store = try fixture.open()
        if try store.keyStore().stored(id: key.id) == nil { try store.keyStore().add(key) }
        return try store.lockRecords(loop: loop)
    }

    /// What another process (the next start) finds on disk.
    func onDisk() throws -> (counter: UInt64, journal: StoredDecisionJournal, log: StoredEventLog) {
        let store = try fixture.open()
        return (store.keyStore().lastCounter(keyID: key.id), fixture.journal(store), store.eventLog())
    }

    func refusal() -> LockEvent {
        LockEvent(kind: .lockOperationError(LockOperationRecord(operation: .lock, source: .remote, who: KeyID(1)), .doorOpen),
                  time: loop.now, lockStateBefore: .unlocked, lockStateAfter: .unlocked, doorState: .open)
    }

    @Test func aStagedCounterIsCommittedWithTheDecision() throws {
        let records = try records()
        let keys = records.commandKeys
        try keys.stageCounter(5, keyID: key.id)
        #expect(keys.lastCounter(keyID: key.id) == 5, "the verifier sees it at once")
        #expect(try onDisk().counter == 0, "staged, not yet written")
        try records.record(fixture.decision(1, .unlock))
        let disk = try onDisk()
        #expect(disk.counter == 5)
        #expect(try disk.journal.interrupted()?.id == DecisionID(1))
        try keys.commitStagedCounter()  // nothing left: no second write
        #expect(try onDisk().counter == 5)
    }

    @Test func aDecisionThatFailsTakesTheCounterWithItThenTheCounterIsCommittedAlone() throws {
        let records = try records()
        let keys = records.commandKeys
        try records.record(fixture.decision(3, .lock))
        try keys.stageCounter(7, keyID: key.id)
        // Not above the highest id: the journal refuses it, the transaction rolls back.
        #expect(throws: StoreError.self) { try records.record(fixture.decision(2, .unlock)) }
        var disk = try onDisk()
        #expect(disk.counter == 0, "neither the counter nor the decision")
        #expect(try disk.journal.entries().map(\.decision.id) == [DecisionID(3)])
        try keys.commitStagedCounter()
        disk = try onDisk()
        #expect(disk.counter == 7, "durable before the command is answered")
    }

    @Test func aCommandThatDecidesNothingHasItsCounterCarriedByTheEventOfItsRefusal() throws {
        let records = try records()
        try records.commandKeys.stageCounter(9, keyID: key.id)
        try records.append(refusal())
        let disk = try onDisk()
        #expect(disk.counter == 9)
        #expect(try disk.log.count() == 1)
    }

    @Test func aCounterThatDoesNotAdvanceFailsTheDecisionSoNothingMoves() throws {
        let records = try records()
        try fixture.open().keyStore().recordCounter(10, keyID: key.id)  // written meanwhile
        try records.commandKeys.stageCounter(4, keyID: key.id)
        #expect(throws: StoreError.self) { try records.record(fixture.decision(1, .unlock)) }
        #expect(try onDisk().journal.entries().isEmpty, "the decision was not recorded: the lock does not move")
        #expect(throws: StoreError.self) { try records.commandKeys.commitStagedCounter() }
        #expect(try onDisk().counter == 10)
    }

    @Test func theVerifierStagesAndTheAnswerCommits() throws {
        let records = try records()
        let link = LinkID(1)
        let verifier = CommandVerifier(keys: records.commandKeys, challenges: ChallengeIssuer(loop: loop),
                                       lockout: LockoutGuard(store: InMemoryLockoutStore(), loop: loop))
        let challenge = verifier.challenges.issue(for: link).challenge
        let frame = try CommandSealing.seal(CommandBody(operation: .lock, commandID: 1), keyID: key.id,
                                            secret: key.secret, counter: 3, challenge: challenge)
        #expect(try verifier.verify(frame.bytes, on: link).get().counter == 3)
        #expect(try onDisk().counter == 0, "waits for the decision")
        try verifier.commitCounter()
        #expect(try onDisk().counter == 3)
    }
}
