import LatchkeyLockProtocol
import LatchkeySim
import LatchkeyTransport
import Testing
@testable import LatchkeySecurity

/// Each test removes one check's reason to exist: it fails if that check is taken out.
struct CommandVerifierTests {
    let loop = ManualEventLoop()
    let link = LinkID(7)
    let user = PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .user)
    let noArrival = PhoneKey(id: 2, name: "guest", secret: CommandSealing.newSecret(), role: .user,
                             mayRequestArrivalUnlock: false)

    let admin = PhoneKey(id: 3, name: "owner", secret: CommandSealing.newSecret(), role: .admin)
    /// An admin key with the arrival opt-in: only such a key may ask for an arrival unlock.
    let arriving = PhoneKey(id: 4, name: "owner's phone", secret: CommandSealing.newSecret(), role: .admin,
                            mayRequestArrivalUnlock: true)

    func make(lockout policy: LockoutPolicy = LockoutPolicy()) -> (CommandVerifier, InMemoryKeyStore) {
        let store = InMemoryKeyStore([user, noArrival, admin, arriving])
        return (CommandVerifier(keys: store, challenges: ChallengeIssuer(loop: loop),
                                lockout: LockoutGuard(store: InMemoryLockoutStore(), policy: policy, loop: loop)), store)
    }

    /// Limits no test of a single check reaches, so a lockout never hides the check's answer.
    static var noLockout: LockoutPolicy {
        var p = LockoutPolicy()
        p.perKeyLimit = .max
        p.overallLimit = .max
        return p
    }

    func frame(_ v: CommandVerifier, key: PhoneKey, counter: UInt64, op: LockOperation = .unlock,
               challenge: [UInt8]? = nil) throws -> [UInt8] {
        let c = challenge ?? v.challenges.issue(for: link).challenge
        let mode: UInt8? = op == .setOperatingMode ? 3 : nil
        return try CommandSealing.seal(CommandBody(operation: op, commandID: counter, operatingMode: mode), keyID: key.id,
                                       secret: key.secret, counter: counter, challenge: c).bytes
    }

    @Test func acceptsAFreshSealedCommand() throws {
        let (v, store) = make()
        let result = v.verify(try frame(v, key: user, counter: 1), on: link)
        #expect(try result.get().body.operation == .unlock)
        #expect(store.lastCounter(keyID: 1) == 1)
    }

    @Test func rejectsAReplayedFrame() throws {
        let (v, _) = make()
        let bytes = try frame(v, key: user, counter: 1)
        #expect(throws: Never.self) { try v.verify(bytes, on: link).get() }
        // Same bytes again: its challenge is spent.
        #expect(v.verify(bytes, on: link).rejection == .staleChallenge)
    }

    @Test func rejectsACounterThatDidNotIncrease() throws {
        let (v, _) = make()
        _ = try v.verify(try frame(v, key: user, counter: 5), on: link).get()
        #expect(v.verify(try frame(v, key: user, counter: 5), on: link).rejection == .replayedCounter)
        #expect(v.verify(try frame(v, key: user, counter: 4), on: link).rejection == .replayedCounter)
    }

    @Test func rejectsAnExpiredChallenge() throws {
        let (v, _) = make()
        let bytes = try frame(v, key: user, counter: 1)
        loop.advance(by: ChallengeIssuer.defaultLifetime)
        #expect(v.verify(bytes, on: link).rejection == .staleChallenge)
    }

    @Test func acceptsAChallengeJustBeforeExpiry() throws {
        let (v, _) = make()
        let bytes = try frame(v, key: user, counter: 1)
        loop.advance(by: ChallengeIssuer.defaultLifetime - .milliseconds(1))
        #expect(throws: Never.self) { try v.verify(bytes, on: link).get() }
    }

    @Test func rejectsAChallengeIssuedOnAnotherLink() throws {
        let (v, _) = make()
        let bytes = try frame(v, key: user, counter: 1)
        #expect(v.verify(bytes, on: LinkID(8)).rejection == .staleChallenge)
    }

    @Test func rejectsAForgedTag() throws {
        let (v, _) = make()
        var bytes = try frame(v, key: user, counter: 1)
        bytes[bytes.count - 1] ^= 0x01
        #expect(v.verify(bytes, on: link).rejection == .authenticationFailed)
    }

    @Test func rejectsATamperedHeaderBecauseTheTagCoversIt() throws {
        let (v, _) = make()
        var bytes = try frame(v, key: user, counter: 1)
        bytes[13] ^= 0x01  // the counter's last octet: associated data
        #expect(v.verify(bytes, on: link).rejection == .authenticationFailed)
    }

    @Test func rejectsTheWrongKey() throws {
        let (v, _) = make()
        let c = v.challenges.issue(for: link).challenge
        let forged = try CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: user.id,
                                             secret: noArrival.secret, counter: 1, challenge: c)
        #expect(v.verify(forged.bytes, on: link).rejection == .authenticationFailed)
    }

    @Test func rejectsUnknownAndRevokedKeys() throws {
        let (v, store) = make()
        let stranger = PhoneKey(id: 99, name: "x", secret: CommandSealing.newSecret(), role: .admin)
        #expect(v.verify(try frame(v, key: stranger, counter: 1), on: link).rejection == .unknownKey)
        store.keys[1]!.revoked = true
        #expect(v.verify(try frame(v, key: user, counter: 2), on: link).rejection == .unknownKey)
    }

    @Test func aUserKeyStoredWithTheArrivalFlagStillCannotAskForArrival() throws {
        // A key an older version stored before arrival became an admin's opt-in.
        let legacy = PhoneKey(id: 9, name: "old guest", secret: CommandSealing.newSecret(), role: .user,
                              mayRequestArrivalUnlock: true)
        let (v, store) = make()
        store.keys[legacy.id] = legacy
        #expect(v.verify(try frame(v, key: legacy, counter: 1, op: .arrivalUnlock), on: link).rejection == .notAuthorized)
        #expect(throws: Never.self) { try v.verify(try frame(v, key: legacy, counter: 2, op: .unlock), on: link).get() }
    }

    @Test func refusesArrivalUnlockForAKeyWithoutTheFlag() throws {
        let (v, _) = make()
        #expect(v.verify(try frame(v, key: noArrival, counter: 1, op: .arrivalUnlock), on: link)
                .rejection == .notAuthorized)
        #expect(v.verify(try frame(v, key: admin, counter: 1, op: .arrivalUnlock), on: link).rejection == .notAuthorized,
                "an admin key without the opt-in")
        #expect(throws: Never.self) { try v.verify(try frame(v, key: arriving, counter: 1, op: .arrivalUnlock), on: link).get() }
    }

    @Test func aUserKeyMayNotChangeTheOperatingMode() throws {
        let (v, store) = make()
        let r = v.verify(try frame(v, key: user, counter: 1, op: .setOperatingMode), on: link)
        #expect(r.rejection == .notAuthorized)
        #expect(store.lastCounter(keyID: user.id) == 0, "a refused command records no counter")
        if case .failure(let f) = r { #expect(f.counted && f.operation == .setOperatingMode) }
        let accepted = try v.verify(try frame(v, key: admin, counter: 1, op: .setOperatingMode), on: link).get()
        #expect(accepted.body.operatingMode == 3)
    }

    @Test func aRevokedKeyIsReportedAsRevoked() throws {
        let (v, store) = make()
        store.keys[1]!.revoked = true
        guard case .failure(let f) = v.verify(try frame(v, key: user, counter: 1), on: link) else {
            Issue.record("a revoked key passed"); return
        }
        #expect(f.rejection == .unknownKey && f.revoked && f.keyID == 1)
    }

    @Test func failsClosedWhenTheCounterCannotBeStored() throws {
        let (v, store) = make()
        store.failWrites = true
        #expect(v.verify(try frame(v, key: user, counter: 1), on: link).rejection == .storageFailure)
    }

    @Test func rejectsEveryTruncationAsMalformed() throws {
        let (v, _) = make(lockout: Self.noLockout)
        let bytes = try frame(v, key: user, counter: 1)
        for n in 0..<bytes.count {
            let r = v.verify(Array(bytes.prefix(n)), on: link)
            #expect(r.rejection == .malformed || r.rejection == .staleChallenge || r.rejection == .authenticationFailed)
            #expect((try? r.get()) == nil)
        }
    }

    @Test func challengesAreRandomNotCounters() {
        let issuer = ChallengeIssuer(loop: loop)
        let a = issuer.issue(for: link).challenge, b = issuer.issue(for: link).challenge
        #expect(a != b)
        #expect(a.count == 16)
    }
}
