import LatchkeyLockProtocol
import LatchkeySim
import LatchkeyTransport
import Testing
@testable import LatchkeySecurity

/// Pairing's key agreement and window, without a radio (docs/LOCK-RULES.md rules 1–3).
struct PairingTests {
    let loop = ManualEventLoop()
    let link = LinkID(5)
    let keys = InMemoryKeyStore()
    let identity = try! LockIdentity(rawPrivateKey: LockIdentity.newRawPrivateKey())
    let responder: PairingResponder

    init() { responder = PairingResponder(identity: identity, registry: keys, loop: loop) }

    func open(_ offer: PairingOffer = PairingOffer(role: .user), for d: Duration = .seconds(60),
              record: @escaping (PairingOutcome) -> Void = { _ in }) {
        #expect(responder.open(for: d, offer: offer, done: record))
    }

    /// The whole exchange: request, response, completion on the phone.
    func pair(_ phone: PairingInitiator, on link: LinkID? = nil) throws -> PairedKey {
        let l = link ?? self.link
        let stored = try responder.handleRequest(phone.request.bytes, on: l).get()
        let key = try phone.complete(try #require(responder.response(for: l)))
        #expect(key.secret == stored.secret, "both sides derive the same key")
        return key
    }

    @Test func bothSidesDeriveOneKeyWithWhatTheLockGranted() throws {
        var outcome: PairingOutcome?
        open(PairingOffer(role: .admin, mayRequestArrivalUnlock: false)) { outcome = $0 }
        let key = try pair(PairingInitiator(name: "alice's phone"))
        #expect(key.keyID == 1 && key.role == .admin && !key.mayRequestArrivalUnlock)
        #expect(key.lockFingerprint == identity.fingerprint)
        let stored = try #require(keys.key(id: 1))
        #expect(stored.name == "alice's phone" && stored.role == .admin && !stored.mayRequestArrivalUnlock)
        #expect(outcome == .paired(stored, comparisonCode: key.comparisonCode), "the lock shows the same code")
        #expect(key.comparisonCode.count == 6)
    }

    @Test func arrivalUnlockIsOffUnlessTheOwnerAsksAndNeverForAUserKey() throws {
        open(PairingOffer(role: .admin))
        #expect(try !pair(PairingInitiator(name: "default")).mayRequestArrivalUnlock, "off by default")
        open(PairingOffer(role: .admin, mayRequestArrivalUnlock: true))
        #expect(try pair(PairingInitiator(name: "owner")).mayRequestArrivalUnlock, "an admin's explicit opt-in")
        // A user (guest) offer that asks for it anyway is granted without it, on both sides.
        open(PairingOffer(role: .user, mayRequestArrivalUnlock: true))
        let guest = try pair(PairingInitiator(name: "guest"))
        #expect(!guest.mayRequestArrivalUnlock && keys.key(id: guest.keyID)?.mayRequestArrivalUnlock == false)
        #expect(arrivalUnlockRefusal(role: .user, arrival: true)?.contains("only an admin key") == true)
        #expect(arrivalUnlockRefusal(role: .admin, arrival: true) == nil)
    }

    @Test func writesOutsideAWindowAreRefused() throws {
        let phone = PairingInitiator(name: "x")
        #expect(responder.handleRequest(phone.request.bytes, on: link) == .failure(.pairingClosed))
        var outcome: PairingOutcome?
        open(for: .seconds(60)) { outcome = $0 }
        loop.advance(by: .seconds(60))
        #expect(outcome == .closedUnused)
        #expect(responder.handleRequest(phone.request.bytes, on: link) == .failure(.pairingClosed))
        #expect(keys.keys.isEmpty)
    }

    @Test func aWindowAdmitsOnePhone() throws {
        open()
        _ = try pair(PairingInitiator(name: "first"))
        let second = PairingInitiator(name: "second")
        #expect(responder.handleRequest(second.request.bytes, on: LinkID(6)) == .failure(.pairingClosed))
        #expect(keys.keys.count == 1)
    }

    @Test func everyPhoneGetsItsOwnKeyAndId() throws {
        open()
        let a = try pair(PairingInitiator(name: "a"))
        open()
        let b = try pair(PairingInitiator(name: "b"))
        #expect(a.keyID != b.keyID)
        #expect(a.secret != b.secret, "no shared static key")
    }

    @Test func theConfirmationCoversWhatTheLockGranted() throws {
        open(PairingOffer(role: .user))
        let phone = PairingInitiator(name: "p")
        _ = try responder.handleRequest(phone.request.bytes, on: link).get()
        let genuine = try PairingResponse(decoding: try #require(responder.response(for: link)))
        var promoted = genuine
        promoted.role = 1  // an attacker in the middle making the phone believe it is admin
        var renumbered = genuine
        renumbered.keyID = 7
        var otherLock = genuine
        otherLock.lockIdentityKey = try LockIdentity(rawPrivateKey: LockIdentity.newRawPrivateKey()).publicKey
        for forged in [promoted, renumbered, otherLock] {
            #expect(throws: PairingFailure.confirmationFailed) { try phone.complete(forged.bytes) }
        }
        #expect(throws: Never.self) { try phone.complete(genuine.bytes) }
    }

    @Test func aPhoneThatExpectsAFingerprintRefusesAnyOtherLock() throws {
        open()
        let phone = PairingInitiator(name: "p", expectedFingerprint: "0000-0000-0000-0000")
        _ = try responder.handleRequest(phone.request.bytes, on: link).get()
        #expect(throws: PairingFailure.unexpectedLock(fingerprint: identity.fingerprint)) {
            try phone.complete(try #require(responder.response(for: link)))
        }
        open()
        let careful = PairingInitiator(name: "p", expectedFingerprint: identity.fingerprint.uppercased())
        #expect(throws: Never.self) { try pair(careful, on: LinkID(9)) }
    }

    @Test func malformedAndLowOrderRequestsAreRefusedAndLeaveTheWindowOpen() throws {
        open()
        let good = PairingInitiator(name: "p").request.bytes
        for n in 0..<good.count { #expect(responder.handleRequest(Array(good.prefix(n)), on: link) == .failure(.malformed)) }
        #expect(responder.handleRequest(good + [0], on: link) == .failure(.malformed))
        let zero = PairingRequest(phonePublicKey: Array(repeating: 0, count: 32), name: "evil").bytes
        #expect(responder.handleRequest(zero, on: link) == .failure(.malformed), "an all-zero shared secret")
        #expect(responder.isOpen)
        #expect(keys.keys.isEmpty)
    }

    @Test func aKeyThatCannotBeStoredIsNotHandedOut() throws {
        open()
        keys.failWrites = true
        #expect(responder.handleRequest(PairingInitiator(name: "p").request.bytes, on: link) == .failure(.storageFailure))
        #expect(responder.response(for: link) == nil)
        #expect(responder.isOpen)
    }

    @Test func framesDecodeStrictly() throws {
        let request = PairingRequest(phonePublicKey: Array(repeating: 9, count: 32), name: String(repeating: "é", count: 40))
        #expect(request.name.utf8.count <= 32, "a long name is cut at a character boundary")
        #expect(try PairingRequest(decoding: request.bytes) == request)
        var badName = request.bytes
        badName[35] = 0xFF
        #expect(throws: LockProtocolError.self) { try PairingRequest(decoding: badName) }
        let response = PairingResponse(lockIdentityKey: Array(repeating: 1, count: 32), lockPublicKey: Array(repeating: 2, count: 32),
                                       keyID: 0x0102_0304, role: 1, flags: 1, confirmation: Array(repeating: 3, count: 16))
        #expect(try PairingResponse(decoding: response.bytes) == response)
        for (offset, value) in [(70, UInt8(2)), (71, UInt8(2)), (0, UInt8(2)), (1, UInt8(0x10))] {
            var b = response.bytes
            b[offset] = value
            #expect(throws: LockProtocolError.self, "octet \(offset)") { try PairingResponse(decoding: b) }
        }
    }
}
