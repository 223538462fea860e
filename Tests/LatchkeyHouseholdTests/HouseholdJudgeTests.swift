@testable import LatchkeyHousehold
import LatchkeyLock
import LatchkeyTransport
import Testing

/// The simulator's judge on its own, fed what a world would report, and a short run twice.
@Suite struct HouseholdJudgeTests {
    static func at(_ s: Int64) -> Instant { Instant(nanoseconds: s * 1_000_000_000) }

    @Test func brokerEventsMustRiseUnlessTheBridgeRestarted() {
        let judge = HouseholdJudge()
        for seq in [1, 2, 3, 5] as [UInt64] { judge.brokerEvent(sequence: seq, at: Self.at(Int64(seq))) }
        #expect(judge.violations.isEmpty)
        #expect(judge.brokerGaps == 1)
        judge.bridgeRestarted()
        judge.brokerEvent(sequence: 5, at: Self.at(6))  // the restarted bridge repeats what it was not sure of
        judge.brokerEvent(sequence: 6, at: Self.at(7))
        #expect(judge.violations.isEmpty && judge.brokerDuplicates == 1)
        judge.brokerEvent(sequence: 4, at: Self.at(8))  // no restart since: out of order
        #expect(judge.violations.map(\.rule) == [.brokerOrder])
    }

    @Test func aRevokedKeysAcceptedCommandIsAViolation() {
        let judge = HouseholdJudge()
        judge.announced(decision: 7, key: 100, at: Self.at(10))
        judge.revoke(100, at: Self.at(20))
        judge.announced(decision: 8, key: 1, at: Self.at(30))
        #expect(judge.violations.isEmpty)
        judge.announced(decision: 9, key: 100, at: Self.at(40))
        #expect(judge.violations.map(\.rule) == [.revokedKeySucceeded])
        judge.phoneAnswered(key: 100, operation: .unlock, ok: false, sent: Self.at(50), at: Self.at(51))
        #expect(judge.violations.count == 1, "a refusal is what a revoked key should get")
    }

    @Test func aPhonesCounterUsedAgainAfterARestartIsAViolation() {
        let judge = HouseholdJudge()
        judge.phoneStarted(key: 1)
        judge.phoneSent(key: 1, counter: 1, at: Self.at(1))
        judge.phoneSent(key: 1, counter: 2, at: Self.at(2))
        judge.phoneSent(key: 100, counter: 1, at: Self.at(3))  // another key's counters are its own
        judge.phoneStarted(key: 1)
        judge.phoneSent(key: 1, counter: 5, at: Self.at(4))  // counters skipped are fine
        #expect(judge.violations.isEmpty && judge.firstCommandsAfterRestart == 2)
        judge.phoneStarted(key: 1)  // its disk lost the last save: it counts from 4 again
        judge.phoneSent(key: 1, counter: 5, at: Self.at(5))
        #expect(judge.violations.map(\.rule) == [.counterReused])
    }

    @Test func aGapOnTheBrokerIsAViolationUnlessRetentionDroppedTheMissingEvents() {
        let judge = HouseholdJudge()
        judge.brokerEvent(sequence: 10, at: Self.at(1))
        // 11-14 were trimmed from the log: its oldest is 15, the one received.
        judge.brokerEvent(sequence: 15, at: Self.at(2)) { .some(15) }
        #expect(judge.violations.isEmpty && judge.brokerGaps == 1 && judge.brokerGapsExplained == 1)
        // The log still holds 16 (its oldest is 12), yet 17 came next.
        judge.brokerEvent(sequence: 17, at: Self.at(3)) { .some(12) }
        #expect(judge.violations.map(\.rule) == [.brokerGap])
        judge.logSize(10_000, retention: 10_000, at: Self.at(4))
        #expect(judge.violations.count == 1)
        judge.logSize(10_001, retention: 10_000, at: Self.at(5))
        #expect(judge.violations.map(\.rule) == [.brokerGap, .retention])
    }

    @Test func aStrangersAcceptedWriteIsAViolation() {
        let judge = HouseholdJudge()
        for n in 1...5 { judge.strangerAnswered(accepted: false, what: "forged command", at: Self.at(Int64(n))) }
        #expect(judge.violations.isEmpty, "refusals are what a stranger should get")
        judge.strangerAnswered(accepted: true, what: "replayed write", at: Self.at(6))
        #expect(judge.violations.map(\.rule) == [.intruderSucceeded])
    }

    @Test func aSlowRelinkIsReportedOnlyWhenItCouldHaveLinked() {
        let judge = HouseholdJudge()
        judge.phoneReturned(at: Self.at(100))
        judge.check(now: Self.at(200), journal: nil, relinkPossible: false)  // the lock was down
        #expect(judge.violations.isEmpty)
        judge.relinkClockRestarts(at: Self.at(200))
        judge.phoneReady(at: Self.at(203))
        #expect(judge.relinkTimes == [.seconds(3)])
        judge.phoneReturned(at: Self.at(300))
        judge.check(now: Self.at(331), journal: nil, relinkPossible: true)
        #expect(judge.violations.map(\.rule) == [.relinkTooSlow])
    }

    @Test func aPhoneWhoseDiskCameBackHasItsBackoffsLongestStepBeforeTheBound() {
        let judge = HouseholdJudge()
        judge.phoneReturned(at: Self.at(100))
        judge.phoneStoreBack(at: Self.at(100), longestStep: .seconds(300))
        judge.relinkClockRestarts(at: Self.at(100))
        judge.check(now: Self.at(429), journal: nil, relinkPossible: true)
        #expect(judge.violations.isEmpty, "its next step may come 300 s later, then 30 s to link")
        judge.check(now: Self.at(431), journal: nil, relinkPossible: true)
        #expect(judge.violations.map(\.rule) == [.relinkTooSlow])
        judge.phoneReturned(at: Self.at(500))
        judge.phoneStoreBack(at: Self.at(500), longestStep: .seconds(300))
        judge.phoneReady(at: Self.at(650))
        #expect(judge.relinkTimesAfterBackoff == [.seconds(150)] && judge.relinkTimes.isEmpty, "told apart")
        judge.phoneReturned(at: Self.at(900))  // the back-off long over: the plain bound again
        judge.check(now: Self.at(931), journal: nil, relinkPossible: true)
        #expect(judge.violations.count == 2)
    }

    @Test func growthIsJudgedFromTheSecondSample() {
        let judge = HouseholdJudge()
        judge.sample(at: Self.at(1), store: 0, heap: 0)              // the first month fills the store
        judge.sample(at: Self.at(2), store: 4 << 20, heap: 8 << 20)
        judge.sample(at: Self.at(3), store: 5 << 20, heap: 20 << 20)
        judge.checkGrowth(now: Self.at(3))
        #expect(judge.violations.isEmpty)
        judge.sample(at: Self.at(4), store: 7 << 20, heap: 8 << 20)
        judge.checkGrowth(now: Self.at(4))
        #expect(judge.violations.map(\.rule) == [.growth])
    }

    /// Two days of a household, twice from one seed: the same trace.
    @Test func theSameSeedPlaysTheSameTrace() throws {
        let first = try HouseholdRun(seed: 31, days: 2).run()
        let second = try HouseholdRun(seed: 31, days: 2).run()
        #expect(first.violations.isEmpty, "\(first.violations)")
        #expect(first.steps == second.steps && first.counts == second.counts)
        #expect(first.traceHash == second.traceHash)
        let other = try HouseholdRun(seed: 32, days: 2).run()
        #expect(other.traceHash != first.traceHash)
    }
}
