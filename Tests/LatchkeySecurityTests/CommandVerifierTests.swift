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

    func make() -> (CommandVerifier, InMemoryKeyStore) {
        let store = InMemoryKeyStore([user, noArrival])
        return (CommandVerifier(keys: store, challenges: ChallengeIssuer(loop: loop)), store)
    }

    func frame(_ v: CommandVerifier, key: PhoneKey, counter: UInt64, op: LockOperation = .unlock,
               challenge: [UInt8]? = nil) throws -> [UInt8] {
        let c = challenge ?? v.challenges.issue(for: link).challenge
        return try CommandSealing.seal(CommandBody(operation: op, commandID: counter), keyID: key.id,
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
        #expect(v.verify(bytes, on: link) == .failure(.staleChallenge))
    }

    @Test func rejectsACounterThatDidNotIncrease() throws {
        let (v, _) = make()
        _ = try v.verify(try frame(v, key: user, counter: 5), on: link).get()
        #expect(v.verify(try frame(v, key: user, counter: 5), on: link) == .failure(.replayedCounter))
        #expect(v.verify(try frame(v, key: user, counter: 4), on: link) == .failure(.replayedCounter))
    }

    @Test func rejectsAnExpiredChallenge() throws {
        let (v, _) = make()
        let bytes = try frame(v, key: user, counter: 1)
        loop.advance(by: ChallengeIssuer.defaultLifetime)
        #expect(v.verify(bytes, on: link) == .failure(.staleChallenge))
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
        #expect(v.verify(bytes, on: LinkID(8)) == .failure(.staleChallenge))
    }

    @Test func rejectsAForgedTag() throws {
        let (v, _) = make()
        var bytes = try frame(v, key: user, counter: 1)
        bytes[bytes.count - 1] ^= 0x01
        #expect(v.verify(bytes, on: link) == .failure(.authenticationFailed))
    }

    @Test func rejectsATamperedHeaderBecauseTheTagCoversIt() throws {
        let (v, _) = make()
        var bytes = try frame(v, key: user, counter: 1)
        bytes[13] ^= 0x01  // the counter's last octet: associated data
        #expect(v.verify(bytes, on: link) == .failure(.authenticationFailed))
    }

    @Test func rejectsTheWrongKey() throws {
        let (v, _) = make()
        let c = v.challenges.issue(for: link).challenge
        let forged = try CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: user.id,
                                             secret: noArrival.secret, counter: 1, challenge: c)
        #expect(v.verify(forged.bytes, on: link) == .failure(.authenticationFailed))
    }

    @Test func rejectsUnknownAndRevokedKeys() throws {
        let (v, store) = make()
        let stranger = PhoneKey(id: 99, name: "x", secret: CommandSealing.newSecret(), role: .admin)
        #expect(v.verify(try frame(v, key: stranger, counter: 1), on: link) == .failure(.unknownKey))
        store.keys[1]!.revoked = true
        #expect(v.verify(try frame(v, key: user, counter: 2), on: link) == .failure(.unknownKey))
    }

    @Test func refusesArrivalUnlockForAKeyWithoutTheFlag() throws {
        let (v, _) = make()
        #expect(v.verify(try frame(v, key: noArrival, counter: 1, op: .arrivalUnlock), on: link)
                == .failure(.notAuthorized))
        #expect(throws: Never.self) { try v.verify(try frame(v, key: user, counter: 1, op: .arrivalUnlock), on: link).get() }
    }

    @Test func failsClosedWhenTheCounterCannotBeStored() throws {
        let (v, store) = make()
        store.failWrites = true
        #expect(v.verify(try frame(v, key: user, counter: 1), on: link) == .failure(.storageFailure))
    }

    @Test func rejectsEveryTruncationAsMalformed() throws {
        let (v, _) = make()
        let bytes = try frame(v, key: user, counter: 1)
        for n in 0..<bytes.count {
            let r = v.verify(Array(bytes.prefix(n)), on: link)
            #expect(r == .failure(.malformed) || r == .failure(.staleChallenge) || r == .failure(.authenticationFailed))
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
