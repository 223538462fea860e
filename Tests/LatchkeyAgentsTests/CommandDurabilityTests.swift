import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeySecurity
import Testing

/// The lock's durable writes as a store that shares one transaction between the verifier's
/// counter and the journal makes them (`StoredLockRecords+Counters`): each commit is one
/// fsync, listed with what it carried and whether the latch line was already energised.
final class CommitRecorder: KeyStore, DecisionJournal {
    let keys: InMemoryKeyStore
    let journal: InMemoryDecisionJournal
    var staged: (keyID: UInt32, counter: UInt64)?
    private(set) var commits: [(writes: [String], latchHigh: Bool)] = []
    /// Reads the latch line at each commit (set once the world exists).
    var latch: () -> Bool = { false }
    /// When set, a decision's transaction fails (a full disk): nothing in it is written.
    var failDecisions = false

    init(keys: InMemoryKeyStore, journal: InMemoryDecisionJournal) {
        self.keys = keys
        self.journal = journal
    }

    func clear() { commits.removeAll() }

    // KeyStore
    func key(id: UInt32) -> PhoneKey? { keys.key(id: id) }
    func lastCounter(keyID: UInt32) -> UInt64 {
        max(keys.lastCounter(keyID: keyID), staged.flatMap { $0.keyID == keyID ? $0.counter : nil } ?? 0)
    }
    func recordCounter(_ counter: UInt64, keyID: UInt32) throws {
        try commitStagedCounter()
        try keys.recordCounter(counter, keyID: keyID)
        commits.append((["counter \(counter)"], latch()))
    }
    func stageCounter(_ counter: UInt64, keyID: UInt32) throws {
        try commitStagedCounter()
        staged = (keyID, counter)
    }
    func commitStagedCounter() throws {
        guard let s = staged else { return }
        staged = nil
        try recordCounter(s.counter, keyID: s.keyID)
    }

    // DecisionJournal: the staged counter rides on the decision's transaction.
    func record(_ decision: LockDecision) throws {
        if failDecisions { throw InMemoryDecisionJournal.Failure("disk full") }
        var writes: [String] = []
        if let s = staged {
            try keys.recordCounter(s.counter, keyID: s.keyID)
            writes.append("counter \(s.counter)")
            staged = nil
        }
        try journal.record(decision)
        writes.append("\(decision.id)")
        commits.append((writes, latch()))
    }
    func complete(_ id: DecisionID, outcome: DecisionOutcome) throws {
        try journal.complete(id, outcome: outcome)
        commits.append((["complete \(id)"], latch()))
    }
}

/// The lock's path, command received → actuator line: one durable commit, holding both the
/// key's new counter and the decision, before the line moves; and neither rule weakened.
struct CommandDurabilityTests {
    static func world() throws -> (AgentWorld, CommitRecorder) {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 1, durables: { CommitRecorder(keys: $0, journal: $1) })
        let recorder = try #require(w.durables as? CommitRecorder)
        recorder.latch = { [unowned w] in w.latchEnergised }
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(5)))
        recorder.clear()
        return (w, recorder)
    }

    @Test func aCommandsCounterAndItsDecisionAreOneCommitBeforeTheLineMoves() throws {
        let (w, recorder) = try Self.world()
        let counter = w.keys.lastCounter(keyID: 1) + 1
        #expect(w.command(.unlock) == nil)
        #expect(w.latchEnergised)
        let first = try #require(recorder.commits.first)
        #expect(first.writes == ["counter \(counter)", "decision#1"], "one transaction: the counter and the decision")
        #expect(!first.latchHigh, "durable before the actuator moved")
        #expect(recorder.commits.filter { $0.writes.contains("counter \(counter)") }.count == 1)
        #expect(w.keys.lastCounter(keyID: 1) == counter)
    }

    @Test func aCommandThatDecidesNothingHasItsCounterCommittedBeforeTheAnswer() throws {
        let (w, recorder) = try Self.world()
        let counter = w.keys.lastCounter(keyID: 1) + 1
        var answered = false
        w.phone.perform(.lock) { _ in answered = true }  // already locked: nothing is decided
        #expect(w.advance(until: { !recorder.commits.isEmpty }, limit: .seconds(5)))
        #expect(!answered, "the counter is durable before the phone hears back")
        #expect(recorder.commits.map(\.writes) == [["counter \(counter)"]])
        #expect(w.advance(until: { answered }, limit: .seconds(5)))
        #expect(recorder.staged == nil)
    }

    @Test func aDecisionThatFailsToPersistMovesNothingAndTheCounterIsStillStored() throws {
        let (w, recorder) = try Self.world()
        let counter = w.keys.lastCounter(keyID: 1) + 1
        recorder.failDecisions = true
        #expect(w.command(.unlock) == .rejected(.storageFailure))
        #expect(!w.latchEnergised, "no decision on disk, no movement")
        #expect(w.lock.controller.lockState == .locked)
        // The failed transaction took the counter with it; it is committed alone before the answer.
        #expect(recorder.commits.map(\.writes) == [["counter \(counter)"]])
        #expect(w.keys.lastCounter(keyID: 1) == counter)
        recorder.failDecisions = false
        #expect(w.command(.unlock) == nil, "the next command goes through")
        #expect(w.latchEnergised)
    }
}
