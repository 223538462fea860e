import LatchkeyLock
import LatchkeyStore
import LatchkeyTransport
import Testing

/// A recovered decision's window is judged on the wall clock (DecisionDeadlineRule): the
/// new process's monotonic clock knows nothing of the time no process ran.
@Suite struct DecisionDeadlineTests {
    @Test func anUnlockPastItsWindowComesBackExpired() throws {
        let fixture = StoreFixture()
        try fixture.journal(try fixture.open()).record(fixture.decision(1, .unlock, validity: .seconds(5)))

        fixture.clocks.advance(by: .seconds(6))
        fixture.clocks.restartProcess()
        let interrupted = try #require(try fixture.journal(try fixture.open()).interrupted())
        let now = fixture.clocks.monotonic
        #expect(!interrupted.isValid(at: now), "the lock must resolve to locked")
        #expect(interrupted.deadline == now - .seconds(1), "one second past its end")
        #expect(!DecisionDeadlineRule.mayResume(interrupted, monotonicNow: now))
    }

    @Test func anUnlockInsideItsWindowKeepsWhatIsLeftOfIt() throws {
        let fixture = StoreFixture()
        try fixture.journal(try fixture.open()).record(fixture.decision(1, .unlock, validity: .seconds(5)))

        fixture.clocks.advance(by: .seconds(2))
        fixture.clocks.restartProcess(monotonicOrigin: Instant(nanoseconds: 7))
        let interrupted = try #require(try fixture.journal(try fixture.open()).interrupted())
        let now = fixture.clocks.monotonic
        #expect(interrupted.isValid(at: now))
        #expect(interrupted.deadline - now == .seconds(3))
        #expect(now - interrupted.decidedAt == .seconds(2))
        #expect(!interrupted.isValid(at: now + .seconds(3)), "and not a nanosecond more")
    }

    @Test func aWallClockThatWentBackwardsExpiresTheUnlock() throws {
        let fixture = StoreFixture()
        try fixture.journal(try fixture.open()).record(fixture.decision(1, .unlock, validity: .seconds(5)))

        // A Pi without a real-time clock reboots with the time it last saved.
        fixture.clocks.wallNanos -= Duration.seconds(3600).nanoseconds
        fixture.clocks.restartProcess()
        let interrupted = try #require(try fixture.journal(try fixture.open()).interrupted())
        #expect(!interrupted.isValid(at: fixture.clocks.monotonic), "elapsed time unknown: never resume an unlock")
    }

    @Test func aLockIsResumedWhateverItsDeadline() throws {
        let fixture = StoreFixture()
        try fixture.journal(try fixture.open()).record(fixture.decision(1, .lock, validity: .seconds(5)))
        fixture.clocks.advance(by: .seconds(86_400 * 3))
        fixture.clocks.restartProcess()
        let interrupted = try #require(try fixture.journal(try fixture.open()).interrupted())
        #expect(interrupted.operation == .lock)
        #expect(DecisionDeadlineRule.mayResume(interrupted, monotonicNow: fixture.clocks.monotonic))
    }

    @Test func theRuleRoundTripsOnOneClockPair() {
        let decision = LockDecision(id: DecisionID(1), operation: .unlock, source: .button,
                                    decidedAt: Instant(nanoseconds: 1_000), deadline: Instant(nanoseconds: 5_001_000))
        let wall = DecisionDeadlineRule.wallTimes(of: decision, wallNow: 10_000_000, monotonicNow: Instant(nanoseconds: 2_000))
        #expect(wall == .init(recorded: 10_000_000, decided: 9_999_000, deadline: 14_999_000))
        let back = DecisionDeadlineRule.rebase(decision, wall: wall, wallNow: 10_000_000,
                                               monotonicNow: Instant(nanoseconds: 2_000))
        #expect(back == decision)
    }
}
