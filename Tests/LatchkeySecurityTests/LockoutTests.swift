import LatchkeyLockProtocol
import LatchkeySim
import LatchkeyTransport
import Testing
@testable import LatchkeySecurity

/// Brute force against the verifier (docs/LOCK-RULES.md rule 5). Each test fails if the rule
/// it names is taken out of `LockoutGuard` or `CommandVerifier`.
struct LockoutTests {
    let loop = ManualEventLoop()
    let link = LinkID(3)
    let alice = PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .user)
    let bob = PhoneKey(id: 2, name: "bob", secret: CommandSealing.newSecret(), role: .user)
    let lockouts = InMemoryLockoutStore()
    let keys: InMemoryKeyStore
    var verifier: CommandVerifier
    var counters: [UInt32: UInt64] = [:]

    init() {
        keys = InMemoryKeyStore([alice, bob])
        verifier = CommandVerifier(keys: keys, challenges: ChallengeIssuer(loop: loop),
                                   lockout: LockoutGuard(store: lockouts, loop: loop))
    }

    /// A correctly sealed command from `key` with its next counter.
    mutating func good(_ key: PhoneKey) throws -> [UInt8] {
        counters[key.id, default: 0] += 1
        let c = verifier.challenges.issue(for: link).challenge
        return try CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: key.id, secret: key.secret,
                                       counter: counters[key.id]!, challenge: c).bytes
    }

    /// A frame naming `key` but sealed with a guessed secret: what brute force sends.
    func forged(_ keyID: UInt32) throws -> [UInt8] {
        let c = verifier.challenges.issue(for: link).challenge
        return try CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: keyID,
                                       secret: CommandSealing.newSecret(), counter: 99, challenge: c).bytes
    }

    func attempt(_ bytes: [UInt8]) -> Result<VerifiedCommand, CommandFailure> { verifier.verify(bytes, on: link) }

    @Test mutating func threeFailuresDisableTheKeyAndItsNextGoodCommandIsNotEvaluated() throws {
        for i in 1...2 {
            let r = attempt(try forged(alice.id))
            #expect(r.rejection == .authenticationFailed, "attempt \(i)")
        }
        guard case .failure(let third) = attempt(try forged(alice.id)) else { Issue.record("forgery passed"); return }
        #expect(third.engaged == [LockoutEngagement(principal: .key(1), level: 1, duration: .seconds(15))])
        // The owner's genuine command is refused without being opened: its counter stays.
        #expect(attempt(try good(alice)).rejection == .lockedOut)
        #expect(keys.lastCounter(keyID: alice.id) == 0)
        #expect(verifier.challenges.liveCount == 0, "the refused command's challenge is withdrawn")
        // Bob is not alice: his key works.
        #expect(attempt(try good(bob)).rejection == nil)
    }

    /// A full or read-only SD card must not turn lockout off (issue 14; before, a failed save
    /// was swallowed and the failure forgotten): the attacker's failure is kept, every command
    /// is refused until the store has saved it, and then it counts.
    @Test mutating func aFailureTheStoreCannotSaveRefusesEveryCommandUntilItIsSaved() throws {
        lockouts.failSaves = true
        #expect(attempt(try forged(alice.id)).rejection == .authenticationFailed)
        #expect(verifier.lockout.storeFault != nil)
        for i in 1...5 {
            #expect(attempt(try forged(alice.id)).rejection == .lockedOut, "attempt \(i) is not even evaluated")
        }
        #expect(attempt(try good(bob)).rejection == .lockedOut, "fails closed for every key")
        #expect(lockouts.states.isEmpty, "nothing was saved")

        lockouts.failSaves = false
        #expect(attempt(try good(bob)).rejection == nil, "saved first, then evaluated")
        #expect(verifier.lockout.storeFault == nil)
        #expect(lockouts.states[.overall]?.failures == 1, "the failure was not forgotten")
        #expect(lockouts.states[.key(alice.id)]?.failures == 1)
    }

    @Test mutating func theLockoutEndsAfterItsTimeAndEachFurtherOneDoubles() throws {
        var policy = LockoutPolicy()
        policy.overallLimit = 1000  // twelve failures: only the key's own limit is under test
        verifier = CommandVerifier(keys: keys, challenges: verifier.challenges,
                                   lockout: LockoutGuard(store: lockouts, policy: policy, loop: loop))
        var expected: [Duration] = []
        var seen: [Duration] = []
        for level in 1...4 {
            for _ in 1...3 {
                if case .failure(let f) = attempt(try forged(alice.id)) { seen += f.engaged.map(\.duration) }
            }
            let d = Duration.seconds(15) * (1 << (level - 1))
            expected.append(d)
            loop.advance(by: d - .milliseconds(1))
            #expect(attempt(try good(alice)).rejection == .lockedOut, "level \(level): still locked 1 ms before the end")
            loop.advance(by: .milliseconds(1))
        }
        #expect(seen == expected, "15 s, 30 s, 60 s, 120 s")
        #expect(attempt(try good(alice)).rejection == nil, "over: the key works again")
    }

    @Test mutating func anotherKeysSuccessDoesNotResetTheCount() throws {
        _ = attempt(try forged(alice.id))
        _ = attempt(try forged(alice.id))
        #expect(attempt(try good(bob)).rejection == nil)
        _ = attempt(try forged(alice.id))
        #expect(attempt(try good(alice)).rejection == .lockedOut)
    }

    @Test mutating func theKeysOwnSuccessEndsItsSeries() throws {
        _ = attempt(try forged(alice.id))
        _ = attempt(try forged(alice.id))
        #expect(attempt(try good(alice)).rejection == nil)
        _ = attempt(try forged(alice.id))
        _ = attempt(try forged(alice.id))
        #expect(attempt(try good(alice)).rejection == nil, "two failures after a success: not three")
        #expect(try lockouts.state(of: .key(1)) == .clean)
    }

    @Test mutating func cyclingKeyIdsHitsTheOverallLimitAndThatStopsEveryone() throws {
        // 10 frames naming keys the lock does not hold: no per-key count, but the overall one.
        for id in UInt32(100)..<110 {
            #expect(attempt(try forged(id)).rejection == .unknownKey)
        }
        #expect(try lockouts.state(of: .overall).lockedUntil == loop.now + .seconds(15))
        #expect(attempt(try good(bob)).rejection == .lockedOut, "the overall lockout refuses every key")
        #expect(attempt([0x00]).rejection == .lockedOut, "and is checked before any parsing")
        loop.advance(by: .seconds(15))
        #expect(attempt(try good(bob)).rejection == nil)
        // Bob's success does not touch the overall series: the next limit doubles.
        for id in UInt32(100)..<110 { _ = attempt(try forged(id)) }
        #expect(try lockouts.state(of: .overall).lockedUntil == loop.now + .seconds(30))
    }

    @Test mutating func malformedFramesCountToo() throws {
        for _ in 1...10 { #expect(attempt([0x01, 0x01, 0x02]).rejection == .malformed) }
        #expect(attempt(try good(alice)).rejection == .lockedOut)
    }

    @Test mutating func attemptsDuringALockoutNeitherCountNorExtendIt() throws {
        for _ in 1...3 { _ = attempt(try forged(alice.id)) }
        let until = try lockouts.state(of: .key(1)).lockedUntil
        for _ in 1...50 { #expect(attempt(try forged(alice.id)).rejection == .lockedOut) }
        #expect(try lockouts.state(of: .key(1)).lockedUntil == until)
        #expect(try lockouts.state(of: .overall).failures == 3)
    }

    @Test mutating func aQuietDayForgivesTheSeries() throws {
        for _ in 1...3 { _ = attempt(try forged(alice.id)) }
        loop.advance(by: .seconds(15))
        _ = attempt(try forged(alice.id))
        loop.advance(by: .seconds(86_400))
        for _ in 1...2 { _ = attempt(try forged(alice.id)) }
        guard case .failure(let f) = attempt(try forged(alice.id)) else { Issue.record("forgery passed"); return }
        #expect(f.engaged.first?.duration == .seconds(15), "a new series starts at the first step again")
    }

    @Test mutating func anUnreadableLockoutStoreFailsClosed() throws {
        lockouts.failReads = true
        #expect(attempt(try good(alice)).rejection == .lockedOut)
        lockouts.failReads = false
        #expect(attempt(try good(alice)).rejection == nil)
    }

    @Test func disableTimesDoubleUpToTheCap() {
        let p = LockoutPolicy()
        #expect((1...10).map { p.disableTime(atLevel: $0) }
                == [15, 30, 60, 120, 240, 480, 960, 1920, 3600, 3600].map { Duration.seconds($0) })
    }
}
