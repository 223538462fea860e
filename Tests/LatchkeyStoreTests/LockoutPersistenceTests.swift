import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeyStore
import LatchkeyTransport
import Testing

/// Brute force against the lock's real stores (docs/LOCK-RULES.md rule 5: lockout state
/// persisted across restarts, not kept in memory). A "restart" opens the database file
/// again in a new store with a new monotonic origin, as a new process would.
@Suite struct LockoutPersistenceTests {
    let fixture = StoreFixture()
    let link = LinkID(1)
    static let alice = PhoneKey(id: 1, name: "alice", secret: Array(repeating: 0xA1, count: 32), role: .user)
    static func secret(of keyID: UInt32) -> [UInt8] {
        keyID == alice.id ? alice.secret : Array(repeating: UInt8(truncatingIfNeeded: keyID), count: 32)
    }
    /// Keys 50...59, one failure each spreads ten failures without reaching a key's limit.
    static let household = (UInt32(50)...59).map { PhoneKey(id: $0, name: "k\($0)", secret: secret(of: $0), role: .user) }

    /// The lock's verifier over a freshly opened store (one process's view).
    final class Lock {
        let store: AgentStore
        let lockouts: StoredLockoutStore
        let verifier: CommandVerifier
        let loop: FixtureLoop
        init(_ fixture: StoreFixture) throws {
            store = try fixture.open()
            loop = FixtureLoop(fixture.clocks)
            lockouts = store.lockoutStore(monotonicNow: { [loop] in loop.now })
            verifier = CommandVerifier(keys: store.keyStore(), challenges: ChallengeIssuer(loop: loop),
                                       lockout: LockoutGuard(store: lockouts, loop: loop))
        }

        /// A failure of the key's own holder (a counter already used): only those count
        /// towards a lockout; a stranger's frames count against their link.
        func fail(_ keyID: UInt32, on link: LinkID) throws -> CommandRejection? {
            let c = verifier.challenges.issue(for: link).challenge
            let bytes = try CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: keyID,
                                                secret: LockoutPersistenceTests.secret(of: keyID), counter: 0,
                                                challenge: c).bytes
            return verifier.verify(bytes, on: link).rejection
        }

        func genuine(counter: UInt64, on link: LinkID) throws -> CommandRejection? {
            let c = verifier.challenges.issue(for: link).challenge
            let k = LockoutPersistenceTests.alice
            let bytes = try CommandSealing.seal(CommandBody(operation: .unlock, commandID: counter), keyID: k.id,
                                                secret: k.secret, counter: counter, challenge: c).bytes
            return verifier.verify(bytes, on: link).rejection
        }
    }

    @Test func aLockoutSurvivesARestartAndKeepsEscalating() throws {
        var lock = try Lock(fixture)
        try lock.store.keyStore().add(Self.alice)
        for _ in 1...3 { #expect(try lock.fail(1, on: link) == .replayedCounter) }
        #expect(try lock.genuine(counter: 1, on: link) == .lockedOut)

        // The process dies 5 s into the 15 s lockout and comes back 2 s later.
        fixture.clocks.advance(by: .seconds(5))
        try lock.store.close()
        fixture.clocks.advance(by: .seconds(2))
        fixture.clocks.restartProcess()
        lock = try Lock(fixture)
        #expect(try lock.genuine(counter: 1, on: link) == .lockedOut, "8 s of the lockout are left")
        fixture.clocks.advance(by: .seconds(8) - .milliseconds(1))
        #expect(try lock.genuine(counter: 1, on: link) == .lockedOut)
        fixture.clocks.advance(by: .milliseconds(1))

        // The series goes on after the restart: three more failures, twice as long.
        for _ in 1...3 { _ = try lock.fail(1, on: link) }
        let state = try lock.lockouts.state(of: .key(1))
        #expect(state.level == 2)
        #expect(state.lockedUntil == lock.loop.now + .seconds(30))
        // And the count survives too: two failures, restart, one more is the limit.
        fixture.clocks.advance(by: .seconds(30))
        #expect(try lock.genuine(counter: 1, on: link) == nil, "the lockout is over; alice's own success")
        for _ in 1...2 { _ = try lock.fail(1, on: link) }
        try lock.store.close()
        fixture.clocks.restartProcess(monotonicOrigin: Instant(nanoseconds: 77))
        lock = try Lock(fixture)
        _ = try lock.fail(1, on: link)
        #expect(try lock.genuine(counter: 2, on: link) == .lockedOut)
    }

    @Test func theOverallCountSurvivesARestart() throws {
        var lock = try Lock(fixture)
        for k in Self.household { try lock.store.keyStore().add(k) }
        for id in UInt32(50)..<59 { _ = try lock.fail(id, on: link) }
        try lock.store.close()
        fixture.clocks.restartProcess()
        lock = try Lock(fixture)
        try lock.store.keyStore().add(Self.alice)
        _ = try lock.fail(1, on: link)  // alice's own first failure is the tenth
        #expect(try lock.genuine(counter: 1, on: link) == .lockedOut, "the tenth failure, after a restart, is the limit")
    }

    @Test func aWallClockThatWentBackDoesNotEndALockout() throws {
        var lock = try Lock(fixture)
        try lock.store.keyStore().add(Self.alice)
        for _ in 1...3 { _ = try lock.fail(1, on: link) }
        try lock.store.close()
        // A reboot on a Pi without a real-time clock: wall time is a day behind.
        fixture.clocks.wallNanos -= 86_400 * 1_000_000_000
        fixture.clocks.restartProcess()
        lock = try Lock(fixture)
        #expect(try lock.genuine(counter: 1, on: link) == .lockedOut)
        fixture.clocks.advance(by: .seconds(15))
        #expect(try lock.genuine(counter: 1, on: link) == nil, "the 15 s it had left, then over")
    }

    @Test func withinOneProcessASteppedWallClockChangesNothing() throws {
        let lock = try Lock(fixture)
        try lock.store.keyStore().add(Self.alice)
        for _ in 1...3 { _ = try lock.fail(1, on: link) }
        fixture.clocks.wallNanos += 3600 * 1_000_000_000  // NTP steps an hour forward
        #expect(try lock.genuine(counter: 1, on: link) == .lockedOut)
    }

    @Test func theLockIdentityIsCreatedOnceAndKept() throws {
        var created = 0
        let first = try fixture.open().lockIdentity { created += 1; return Array(repeating: 7, count: 32) }
        let again = try fixture.open().lockIdentity { created += 1; return Array(repeating: 8, count: 32) }
        #expect(first == again && created == 1)
    }
}

/// The loop clock of a `StoreFixture`: the lock's `now` is the fixture's monotonic clock.
final class FixtureLoop: EventLoop {
    let clocks: TestClocks
    init(_ clocks: TestClocks) { self.clocks = clocks }
    var now: Instant { clocks.monotonic }
    func schedule(at deadline: Instant, _ work: @escaping () -> Void) -> Scheduled {
        Scheduled(deadline: deadline, work: work)
    }
    func execute(_ work: @escaping () -> Void) { work() }
}

/// The wall/monotonic conversion on its own.
@Suite struct LockoutTimeRuleTests {
    @Test func anotherProcessSeesTheSameRemainingTime() {
        let wall = LockoutTimeRule.wallTimes(lockedUntil: Instant(nanoseconds: 20_000), lastFailure: Instant(nanoseconds: 5_000),
                                             wallNow: 1_000_000, monotonicNow: Instant(nanoseconds: 10_000))
        #expect(wall == .init(lockedUntil: 1_010_000, lastFailure: 995_000, recorded: 1_000_000))
        let back = LockoutTimeRule.rebase(wall, wallNow: 1_004_000, monotonicNow: Instant(nanoseconds: 1))
        #expect(back.lockedUntil == Instant(nanoseconds: 6_001), "10 µs were left, 4 µs passed")
        #expect(back.lastFailure == Instant(nanoseconds: -8_999))
    }

    @Test func aWallClockBehindTheRecordKeepsTheWholeRemainder() {
        let wall = LockoutTimeRule.WallTimes(lockedUntil: 1_010_000, lastFailure: 995_000, recorded: 1_000_000)
        let back = LockoutTimeRule.rebase(wall, wallNow: 400_000, monotonicNow: Instant(nanoseconds: 50))
        #expect(back.lockedUntil == Instant(nanoseconds: 10_050))
        #expect(back.lastFailure == Instant(nanoseconds: 50), "the last failure counts as just now")
    }
}
