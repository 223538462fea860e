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
        #expect(v.verify(try frame(v, key: stranger, counter: 1), on: link).rejection == .authenticationFailed)
        store.keys[1]!.revoked = true
        #expect(v.verify(try frame(v, key: user, counter: 2), on: link).rejection == .unknownKey,
                "only the holder of a revoked key learns it is revoked")
    }

    /// A stranger probing key ids: an id the lock holds and one it does not get the same
    /// answer, whether the challenge is fresh or spent (today's 0x81 vs 0x83 told them apart).
    @Test func aStrangerCannotTellWhichKeyIdsExist() throws {
        let (v, _) = make(lockout: Self.noLockout)
        func probe(_ id: UInt32, freshChallenge: Bool) throws -> CommandRejection? {
            let guess = PhoneKey(id: id, name: "x", secret: CommandSealing.newSecret(), role: .user)
            let c = freshChallenge ? nil : Array(repeating: UInt8(7), count: 16)
            if !freshChallenge { _ = v.challenges.issue(for: link) }
            return v.verify(try frame(v, key: guess, counter: 1, challenge: c), on: link).rejection
        }
        for fresh in [true, false] {
            let held = try probe(user.id, freshChallenge: fresh)
            let absent = try probe(4242, freshChallenge: fresh)
            #expect(held == absent, "fresh challenge: \(fresh)")
            #expect(held == (fresh ? .authenticationFailed : .staleChallenge))
        }
    }

    /// Frames that fail before their tag are the link's problem: the third drops the link,
    /// no lockout count is written, and another link is not affected.
    @Test func unauthenticatedFramesCountAgainstTheirLinkOnly() throws {
        let lockouts = InMemoryLockoutStore()
        let v = CommandVerifier(keys: InMemoryKeyStore([user]), challenges: ChallengeIssuer(loop: loop),
                                lockout: LockoutGuard(store: lockouts, loop: loop))
        let stranger = PhoneKey(id: 9, name: "x", secret: CommandSealing.newSecret(), role: .user)
        var drops: [Bool] = []
        for bytes in [[0x01], try frame(v, key: stranger, counter: 1), try frame(v, key: stranger, counter: 2)] {
            guard case .failure(let f) = v.verify(bytes, on: link) else { Issue.record("a stranger passed"); return }
            #expect(!f.counted && f.engaged.isEmpty && f.session == nil)
            drops.append(f.dropLink)
        }
        #expect(drops == [false, false, true])
        #expect(lockouts.states.isEmpty)
        #expect(v.strikes(on: LinkID(8)) == 0)
        v.forget(link)
        #expect(v.strikes(on: link) == 0)
        #expect(throws: Never.self) { try v.verify(try frame(v, key: user, counter: 1), on: link).get() }
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
        #expect(f.session == nil, "a revoked key opens no session")
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

/// The link's session (docs/SECURITY.md, "Sessions"): the lock and the phone derive the
/// same key from the command frame, and what the lock seals only that phone opens.
struct LinkSessionTests {
    let loop = ManualEventLoop()
    let link = LinkID(1)
    let user = PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .user)

    func opened() throws -> (lock: LinkSession, phone: LinkSession) {
        let v = CommandVerifier(keys: InMemoryKeyStore([user]), challenges: ChallengeIssuer(loop: loop),
                                lockout: LockoutGuard(store: InMemoryLockoutStore(), loop: loop))
        let frame = try CommandSealing.seal(CommandBody(operation: .present, commandID: 1), keyID: 1, secret: user.secret,
                                            counter: 1, challenge: v.challenges.issue(for: link).challenge)
        let lock = try #require(v.verify(frame.bytes, on: link).session)
        return (lock, LinkSession(opening: frame, secret: user.secret))
    }

    @Test func whatTheLockSealsThePhoneOpensOnceAndInOrder() throws {
        var (lock, phone) = try opened()
        let first = lock.seal([1, 2, 3], as: .status).bytes
        let second = lock.seal([4, 5], as: .status).bytes
        #expect(try phone.open(first, as: .status) == [1, 2, 3])
        #expect(try phone.open(second, as: .status) == [4, 5])
        #expect(throws: LinkSession.OpenError.replayed(1)) { try phone.open(first, as: .status) }
    }

    @Test func aReplyIsBoundToItsKindItsSequenceAndItsSession() throws {
        var (lock, phone) = try opened()
        var (_, otherPhone) = try opened()  // another command: another session
        let reply = lock.seal([9, 9, 9, 9], as: .status).bytes
        #expect(throws: LinkSession.OpenError.wrongKind(.status)) { try phone.open(reply, as: .logTransfer) }
        #expect(throws: LinkSession.OpenError.authenticationFailed) { try otherPhone.open(reply, as: .status) }
        var bumped = reply
        bumped[5] ^= 0x02  // the sequence: associated data
        #expect(throws: LinkSession.OpenError.authenticationFailed) { try phone.open(bumped, as: .status) }
        var flipped = reply
        flipped[7] ^= 0x01
        #expect(throws: LinkSession.OpenError.authenticationFailed) { try phone.open(flipped, as: .status) }
        #expect(try phone.open(reply, as: .status) == [9, 9, 9, 9])
    }

    @Test func theCiphertextDoesNotCarryThePlaintext() throws {
        var (lock, _) = try opened()
        let status = LockStatusFrame(lockState: 2, doorState: 1, operatingMode: 0, actuatorEnabled: true,
                                     lastEventSequence: 77).bytes
        let a = lock.seal(status, as: .status).bytes, b = lock.seal(status, as: .status).bytes
        #expect(a != b, "the same state twice looks different on the air")
        #expect(!a.contains(status[1...4]), "the bolt and door octets are not in clear")
    }
}
