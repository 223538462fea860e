import Foundation
import LatchkeyLock
@testable import LatchkeyRuntime
import LatchkeySim
import LatchkeyStore
import LatchkeyTransport
import Testing

/// The torture's judge must see what it is there to see: each rule broken on purpose in a
/// real store, and the audit counting it.
@Suite struct TortureAuditTests {
    final class Scratch {
        let path: String
        let loop = ManualEventLoop()
        let wall = WallClock { 1_750_000_000_000_000_000 }
        init() {
            var template = Array("/tmp/latchkey-audit-XXXXXX".utf8CString)
            path = String(cString: mkdtemp(&template)!) + "/lock"
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
        #expect(audit.unexplainedRises([disk.entries[0].wall.recorded + 1], disk) == 0)
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
        audit.noteKilled(open: try TortureAudit.read(lockState: s.path).open, restartWall: 0)
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
        let recorded = disk.entries[0].wall.recorded
        var audit = TortureAudit()
        #expect(audit.unexplainedRises([recorded - 1], disk) == 1, "a rise before the decision was durable")
        #expect(audit.unexplainedRises([recorded + 1, recorded + 2], disk) == 1, "one decision, one rise")
        audit.noteKilled(open: disk.open, restartWall: recorded + 3)
        #expect(audit.unexplainedRises([recorded + 1, recorded + 4], disk) == 0, "resumed once after a kill")
    }
}
