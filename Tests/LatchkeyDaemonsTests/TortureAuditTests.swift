import Foundation
import LatchkeyLock
@testable import LatchkeyDaemons
@testable import LatchkeyDemo
@testable import LatchkeyTorture
import LatchkeySim
import LatchkeyStore
import LatchkeyTransport
import Testing
import LatchkeyPosix

/// The torture's judge must see what it is there to see: each rule broken on purpose in a
/// real store, and the audit counting it.
@Suite struct TortureAuditTests {
    final class Scratch {
        let path: String
        let loop = ManualEventLoop()
        let wall = WallClock { 1_750_000_000_000_000_000 }
        init() {
            path = try! RuntimeDirectory.makeTemporary(prefix: "latchkey-audit") + "/lock"
        }
        deinit { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }

        func store() throws -> AgentStore { try AgentStore(directory: path, fileName: StateStores.lockFile, wallClock: wall) }
        func decision(_ id: UInt64, _ operation: LockOperationType) -> LockDecision {
            LockDecision(id: DecisionID(id), operation: operation, source: .remote, decidedAt: .zero,
                         deadline: .zero + .seconds(5))
        }
        func closing(_ id: UInt64, _ operation: LockOperationType, error: OperationError? = nil,
                     recovered: Bool = false) -> LockEvent {
            let record = LockOperationRecord(operation: operation, source: .remote, decision: DecisionID(id), recovered: recovered)
            return LockEvent(kind: error.map { .lockOperationError(record, $0) } ?? .lockOperation(record), time: .zero,
                             lockStateBefore: .locked, lockStateAfter: .locked, doorState: .closed)
        }
    }

    @Test func aCleanHistoryPasses() throws {
        let s = Scratch()
        let records = try s.store().lockRecords(loop: s.loop)
        try records.record(s.decision(1, .unlock))
        try records.complete(DecisionID(1), outcome: .succeeded)
        try records.append(s.closing(1, .unlock))
        var audit = TortureAudit()
        audit.announced = [1]
        let disk = try TortureAudit.read(lockState: s.path)
        audit.check(disk, final: true)
        #expect(audit.lostDecisions.isEmpty)
        // Its rise: TortureSelfTestTests' clean case (this store's wall clock stands still).
    }

    @Test func anAnnouncedDecisionMissingFromTheJournalIsLost() throws {
        let s = Scratch()
        try s.store().decisionJournal(monotonicNow: { .zero }).record(s.decision(1, .lock))
        var audit = TortureAudit()
        audit.announced = [1, 2]
        audit.check(try TortureAudit.read(lockState: s.path))
        #expect(audit.lostDecisions == ["decision #2 was announced but is not in the journal"])
    }

    @Test func aCompletionWithoutItsEventIsLost() throws {
        let s = Scratch()
        let journal = try s.store().decisionJournal(monotonicNow: { .zero })
        try journal.record(s.decision(1, .lock))
        try journal.complete(DecisionID(1), outcome: .succeeded)  // not through StoredLockRecords
        var audit = TortureAudit()
        audit.check(try TortureAudit.read(lockState: s.path))
        #expect(audit.lostDecisions.count == 1)
    }

    @Test func aLockDecisionAbandonedAtStartIsLost() throws {
        let s = Scratch()
        let records = try s.store().lockRecords(loop: s.loop)
        try records.record(s.decision(1, .lock))
        var audit = TortureAudit()
        audit.noteStart(at: .zero, wall: 0, open: try TortureAudit.read(lockState: s.path).open)
        try records.complete(DecisionID(1), outcome: .abandoned)
        try records.append(s.closing(1, .lock, error: .interrupted, recovered: true))
        audit.check(try TortureAudit.read(lockState: s.path), final: true)
        #expect(audit.lostDecisions == ["lock decision #1 was abandoned instead of resumed"])
    }

    @Test func aRiseNoUnlockPaysForIsUnintended() throws {
        let s = Scratch()
        let records = try s.store().lockRecords(loop: s.loop)
        try records.record(s.decision(1, .unlock))
        let disk = try TortureAudit.read(lockState: s.path)
        var audit = TortureAudit()
        let early = Instant(nanoseconds: -1), rise = Instant.zero + .milliseconds(1)
        #expect(audit.unexplainedRises([early], disk).map(\.reason) == [.noDecision], "a rise before the decision was durable")
        #expect(audit.unexplainedRises([rise, rise + .milliseconds(1)], disk).count == 1, "one decision, one rise")
        audit.noteStart(at: rise + .milliseconds(2), wall: 0, open: disk.open)
        #expect(audit.unexplainedRises([rise, rise + .milliseconds(3)], disk).isEmpty, "resumed once after a kill")
    }
}

/// The self-test's faults, each injected into a real store and a real file chip, read back
/// through the torture's own line observer: the audit must report each, for its reason, and
/// must not report a clean unlock. On the audit before edge logs (levels read at inotify
/// wake-ups, any earlier unlock with budget left explaining a rise) every fault case fails.
@Suite struct TortureSelfTestTests {
    typealias Bench = TortureSelfTest.Bench

    static let caseNames = TortureSelfTest.cases.map(\.name)

    @Test(arguments: caseNames) func eachCaseComesOutAsItMust(_ name: String) throws {
        let test = try #require(TortureSelfTest.cases.first { $0.name == name })
        let unexplained = try TortureSelfTest.outcome(of: test)
        if let expected = test.expected {
            #expect(unexplained.count == 1, "\(unexplained)")
            #expect(unexplained.first.map { expected($0.reason) } == true, "\(unexplained)")
        } else {
            #expect(unexplained.isEmpty, "\(unexplained)")
        }
    }

    @Test func theSelfTestPassesAndSaysSoCaseByCase() {
        var lines: [String] = []
        #expect(TortureSelfTest.run { lines.append($0) })
        #expect(lines.count == TortureSelfTest.cases.count)
        #expect(lines.allSatisfy { $0.contains("-> ok: ") })
    }

    func unexplained(_ play: (Bench) throws -> Void) throws -> [UnlockRiseAudit.Unexplained] {
        let bench = try Bench()
        defer { bench.tearDown() }
        try play(bench)
        return try bench.unexplained()
    }

    @Test func aPulseBetweenTwoReadsOfTheLineIsSeenWithTheTimesItWasDriven() throws {
        let bench = try Bench()
        defer { bench.tearDown() }
        bench.observer.sample()
        let start = bench.loop.now
        try bench.pulse(width: .microseconds(50))
        #expect(bench.observer.changes.isEmpty, "not read yet")
        bench.observer.sample()
        #expect(bench.observer.changes == [
            LineObserver.Change(line: Bench.line, high: true, at: start),
            LineObserver.Change(line: Bench.line, high: false, at: start + .microseconds(50)),
        ])
        #expect(!bench.observer.isHigh(Bench.line))
    }

    @Test func anUnlockResumedAfterAKillExplainsOneRiseInEachProcess() throws {
        let bench = try Bench()
        defer { bench.tearDown() }
        let id = try bench.decide(.unlock)
        try bench.pulse()       // killed while the motor ran
        try bench.restart()     // found open inside its window: driven again
        try bench.pulse()
        try bench.complete(id, .succeeded)
        let verdict = try bench.verdict()
        #expect(verdict.unexplained.isEmpty, "\(verdict.unexplained)")
        #expect(verdict.explainedByResume == 1)
    }

    @Test func aRiseInALaterProcessThatDidNotTakeTheDecisionUpIsUnintended() throws {
        let found = try unexplained { bench in
            _ = try bench.decide(.unlock)
            try bench.restart(findingOpen: false)  // as if the journal had held nothing open
            try bench.pulse()
        }
        #expect(found.map(\.reason) == [.notCarried(decision: 1)], "\(found)")
    }

    @Test func aLockDecisionExplainsNoRiseOfTheUnlockLine() throws {
        let found = try unexplained { bench in
            let id = try bench.decide(.lock)
            try bench.pulse()
            try bench.complete(id, .succeeded)
        }
        #expect(found.map(\.reason) == [.noDecision], "\(found)")
    }

    @Test func aRiseAfterItsUnlockSucceededIsUnintended() throws {
        let found = try unexplained { bench in
            let id = try bench.decide(.unlock)
            try bench.pulse()
            try bench.complete(id, .succeeded)
            try bench.pulse()
        }
        #expect(found.map(\.reason) == [.ended(decision: 1, outcome: .succeeded)], "\(found)")
    }
}
