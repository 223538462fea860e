import LatchkeyLockProtocol
import LatchkeySim
import LatchkeyTransport
import Testing
@testable import LatchkeySecurity

/// Failed attempts against the verifier (docs/LOCK-RULES.md rule 5). Each test fails if the rule
/// it names is taken out of `LockoutGuard` or `CommandVerifier`. Only a key's holder can
/// count towards a lockout (a frame whose tag verified); a stranger's frames count against
/// their link only (`strangersFramesNeverCount...`).
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
    mutating func good(_ key: PhoneKey, _ operation: LockOperation = .unlock) throws -> [UInt8] {
        counters[key.id, default: 0] += 1
        let c = verifier.challenges.issue(for: link).challenge
        return try CommandSealing.seal(CommandBody(operation: operation, commandID: 1), keyID: key.id, secret: key.secret,
                                       counter: counters[key.id]!, challenge: c).bytes
    }

    /// A frame of `key`'s holder that fails after its tag verified (a counter already used):
    /// the kind of failure that counts towards a lockout.
    func failing(_ key: PhoneKey) throws -> [UInt8] {
        let c = verifier.challenges.issue(for: link).challenge
        return try CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: key.id, secret: key.secret,
                                       counter: 0, challenge: c).bytes
    }

    /// A frame naming `keyID` but sealed with a guessed secret: what brute force sends.
    func forged(_ keyID: UInt32) throws -> [UInt8] {
        let c = verifier.challenges.issue(for: link).challenge
        return try CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: keyID,
                                       secret: CommandSealing.newSecret(), counter: 99, challenge: c).bytes
    }

    func attempt(_ bytes: [UInt8]) -> Result<VerifiedCommand, CommandFailure> { verifier.verify(bytes, on: link) }

    @Test mutating func threeFailuresDisableTheKeyAndItsNextGoodCommandIsNotEvaluated() throws {
        for i in 1...2 {
            let r = attempt(try failing(alice))
            #expect(r.rejection == .replayedCounter, "attempt \(i)")
        }
        guard case .failure(let third) = attempt(try failing(alice)) else { Issue.record("forgery passed"); return }
        #expect(third.engaged == [LockoutEngagement(principal: .key(1), level: 1, duration: .seconds(15))])
        // The owner's genuine unlock is refused: its counter stays. Its lock is not refused.
        #expect(attempt(try good(alice)).rejection == .lockedOut)
        #expect(keys.lastCounter(keyID: alice.id) == 0)
        #expect(verifier.challenges.liveCount == 0, "the refused command's challenge is spent")
        #expect(throws: Never.self) { try attempt(try good(alice, .lock)).get() }
        // Bob is not alice: his key works.
        #expect(attempt(try good(bob)).rejection == nil)
    }

    /// A full or read-only SD card must not turn lockout off (before, a failed save
    /// was swallowed and the failure forgotten): the key holder's failure is kept, every
    /// command but `lock` is refused until the store has saved it, and then it counts.
    @Test mutating func aFailureTheStoreCannotSaveRefusesEveryCommandUntilItIsSaved() throws {
        lockouts.failSaves = true
        #expect(attempt(try failing(alice)).rejection == .replayedCounter)
        #expect(verifier.lockout.storeFault != nil)
        for i in 1...5 {
            #expect(attempt(try failing(alice)).rejection == .lockedOut, "attempt \(i) is not even counted")
        }
        #expect(attempt(try good(bob)).rejection == .lockedOut, "fails closed for every key")
        #expect(throws: Never.self, "locking is always safe") { try attempt(try good(bob, .lock)).get() }
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
                if case .failure(let f) = attempt(try failing(alice)) { seen += f.engaged.map(\.duration) }
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
        _ = attempt(try failing(alice))
        _ = attempt(try failing(alice))
        #expect(attempt(try good(bob)).rejection == nil)
        _ = attempt(try failing(alice))
        #expect(attempt(try good(alice)).rejection == .lockedOut)
    }

    @Test mutating func theKeysOwnSuccessEndsItsSeries() throws {
        _ = attempt(try failing(alice))
        _ = attempt(try failing(alice))
        #expect(attempt(try good(alice)).rejection == nil)
        _ = attempt(try failing(alice))
        _ = attempt(try failing(alice))
        #expect(attempt(try good(alice)).rejection == nil, "two failures after a success: not three")
        // The series is over; when it last failed is kept for the lock-wide rule.
        let after = try lockouts.state(of: .key(1))
        #expect(after.failures == 0 && after.level == 0 && after.lockedUntil == nil && after.lastFailure != nil)
    }

    @Test mutating func strangersFramesNeverCountAgainstAKeyOrTheLock() throws {
        // Far beyond both limits: key ids the lock does not hold, forged tags naming a key
        // it holds, malformed frames, stale challenges. None was sealed with a key the lock
        // holds, so none is anybody's failure but the link's.
        for id in UInt32(100)..<130 { #expect(attempt(try forged(id)).rejection == .authenticationFailed) }
        for _ in 1...30 { #expect(attempt(try forged(alice.id)).rejection == .authenticationFailed) }
        for _ in 1...30 { #expect(attempt([0x01, 0x01, 0x02]).rejection == .malformed) }
        #expect(lockouts.states.isEmpty, "no count was written")
        #expect(verifier.strikes(on: link) == 90, "each counted against the link that sent it")
        #expect(attempt(try good(alice)).rejection == nil)
        #expect(attempt(try good(bob)).rejection == nil)
    }

    @Test mutating func theOverallLimitStopsEveryKeyButLock() throws {
        // Failures of key holders, spread over two keys (each under its own limit).
        var policy = LockoutPolicy()
        policy.overallLimit = 4
        verifier = CommandVerifier(keys: keys, challenges: verifier.challenges,
                                   lockout: LockoutGuard(store: lockouts, policy: policy, loop: loop))
        for key in [alice, bob, alice, bob] { #expect(attempt(try failing(key)).rejection == .replayedCounter) }
        #expect(try lockouts.state(of: .overall).lockedUntil == loop.now + .seconds(15))
        #expect(attempt(try good(bob)).rejection == .lockedOut, "the overall lockout refuses every key that failed")
        // Locking is always safe: a lockout never refuses it.
        #expect(throws: Never.self) { try attempt(try good(alice, .lock)).get() }
        loop.advance(by: .seconds(15))
        #expect(attempt(try good(bob)).rejection == nil)
    }

    /// A guest who fails on purpose — two failures that count (an operation its role may not
    /// ask for), then one success that ends its own series — about nine frames an hour for a
    /// simulated day: it reaches the lock-wide limit again and again, and the owner, who
    /// never failed, unlocks every time, as does the guest's own clean key.
    @Test mutating func aGuestFailingOnPurposeForADayNeverLocksTheOwnerOut() throws {
        let owner = PhoneKey(id: 7, name: "owner", secret: CommandSealing.newSecret(), role: .admin)
        let guest = PhoneKey(id: 8, name: "guest", secret: CommandSealing.newSecret(), role: .user)
        keys.keys[owner.id] = owner
        keys.keys[guest.id] = guest
        var overallLockouts = 0, guestCounted = 0
        for hour in 0..<24 {
            for _ in 0..<3 {
                for _ in 0..<2 {
                    let r = attempt(try good(guest, .setOperatingMode))
                    #expect(r.rejection == .notAuthorized || r.rejection == .lockedOut)
                    if case .failure(let f) = r {
                        overallLockouts += f.engaged.filter { $0.principal == .overall }.count
                        if f.counted { guestCounted += 1 }
                    }
                }
                _ = attempt(try good(guest))
                loop.advance(by: .seconds(20 * 60))
            }
            #expect(attempt(try good(owner)).rejection == nil, "the owner at hour \(hour)")
            #expect(attempt(try good(owner, .lock)).rejection == nil)
        }
        #expect(overallLockouts >= 3, "the guest did reach the lock-wide limit (\(overallLockouts) times)")
        // At this slow pace each try is its own audit entry (about six an hour): the log's
        // 10,000 events hold two months of it.
        #expect(guestCounted <= 144)
    }

    /// `lock` passes every lockout, so it must not end the series either: a holder failing
    /// twice and locking between its failures still reaches its own limit at the third.
    @Test mutating func aLockNeverWipesTheKeysOwnCount() throws {
        _ = attempt(try failing(alice))
        _ = attempt(try failing(alice))
        #expect(attempt(try good(alice, .lock)).rejection == nil)
        guard case .failure(let f) = attempt(try failing(alice)) else { Issue.record("passed"); return }
        #expect(f.engaged.contains { $0.principal == .key(alice.id) }, "the third failure is the limit")
    }

    /// The reviewer's pattern at full speed — two forbidden requests, then a success, two
    /// hundred times in a row: once the lock-wide limit is reached the guest, who failed
    /// recently, is refused with it, so its counted failures (each an audit entry) stop at
    /// the limit instead of flooding the log.
    @Test mutating func aFastGuestIsStoppedByTheLockWideLockout() throws {
        let guest = PhoneKey(id: 8, name: "guest", secret: CommandSealing.newSecret(), role: .user)
        keys.keys[guest.id] = guest
        var counted = 0
        for _ in 0..<200 {
            for _ in 0..<2 {
                if case .failure(let f) = attempt(try good(guest, .setOperatingMode)), f.counted { counted += 1 }
            }
            _ = attempt(try good(guest, .present))
            _ = attempt(try good(guest, .lock))
            loop.advance(by: .milliseconds(150))
        }
        #expect(counted <= Int(LockoutPolicy().overallLimit) + 2, "\(counted) counted failures in 400 tries over 30 s")
        #expect(attempt(try good(alice)).rejection == nil, "a key that never failed still unlocks")
    }

    @Test mutating func theLockWideLockoutRefusesOnlyKeysWithAFailureOfTheirOwn() throws {
        var policy = LockoutPolicy()
        policy.overallLimit = 3
        verifier = CommandVerifier(keys: keys, challenges: verifier.challenges,
                                   lockout: LockoutGuard(store: lockouts, policy: policy, loop: loop))
        for _ in 1...2 { _ = attempt(try failing(alice)) }
        _ = attempt(try failing(bob))  // the third: the lock-wide lockout
        #expect(try lockouts.state(of: .overall).lockedUntil == loop.now + .seconds(15))
        #expect(attempt(try good(alice)).rejection == .lockedOut, "alice failed in this series")
        #expect(attempt(try good(bob)).rejection == .lockedOut, "so did bob")
        let carol = PhoneKey(id: 3, name: "carol", secret: CommandSealing.newSecret(), role: .user)
        keys.keys[carol.id] = carol
        #expect(attempt(try good(carol)).rejection == nil, "carol never failed")
    }

    @Test mutating func attemptsDuringALockoutNeitherCountNorExtendIt() throws {
        for _ in 1...3 { _ = attempt(try failing(alice)) }
        let until = try lockouts.state(of: .key(1)).lockedUntil
        for _ in 1...50 { #expect(attempt(try failing(alice)).rejection == .lockedOut) }
        #expect(try lockouts.state(of: .key(1)).lockedUntil == until)
        #expect(try lockouts.state(of: .overall).failures == 3)
    }

    @Test mutating func aQuietDayForgivesTheSeries() throws {
        for _ in 1...3 { _ = attempt(try failing(alice)) }
        loop.advance(by: .seconds(15))
        _ = attempt(try failing(alice))
        loop.advance(by: .seconds(86_400))
        for _ in 1...2 { _ = attempt(try failing(alice)) }
        guard case .failure(let f) = attempt(try failing(alice)) else { Issue.record("forgery passed"); return }
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
