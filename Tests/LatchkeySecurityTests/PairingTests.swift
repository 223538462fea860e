import LatchkeyLockProtocol
import LatchkeySim
import LatchkeyTransport
import Testing
@testable import LatchkeySecurity

/// A lock's pairing responder and the phones that talk to it, without a radio.
struct PairingRig {
    let loop = ManualEventLoop()
    let link = LinkID(5)
    let keys = InMemoryKeyStore()
    let identity = try! LockIdentity(rawPrivateKey: LockIdentity.newRawPrivateKey())
    let responder: PairingResponder

    init() { responder = PairingResponder(identity: identity, registry: keys, loop: loop) }

    /// A phone that pins this lock's fingerprint (or `fingerprint`), as `latchkey phone pair` does.
    func phone(_ name: String = "p", pinning fingerprint: String? = nil) -> PairingInitiator {
        try! PairingInitiator(name: name, expectedFingerprint: fingerprint ?? identity.fingerprint)
    }

    func open(_ offer: PairingOffer = PairingOffer(role: .user), for d: Duration = .seconds(60),
              record: @escaping (PairingOutcome) -> Void = { _ in }) {
        #expect(responder.open(for: d, offer: offer, done: record))
    }

    /// Request, response and the phone's check: the phone holds its key, the lock a pending one.
    func exchange(_ phone: PairingInitiator, on link: LinkID? = nil) throws -> (phone: PairedKey, lock: PendingPairing) {
        let l = link ?? self.link
        let pending = try responder.handleRequest(phone.request.bytes, on: l).get()
        let key = try phone.complete(try #require(responder.response(for: l)))
        #expect(key.secret == pending.key.secret, "both sides derive the same key")
        #expect(key.comparisonCode == pending.comparisonCode, "and show the same code")
        return (key, pending)
    }

    /// The whole exchange, confirmed on the lock's side with the code the phone shows.
    func pair(_ phone: PairingInitiator, on link: LinkID? = nil) throws -> PairedKey {
        let (key, _) = try exchange(phone, on: link)
        let outcome = try #require(responder.confirm(code: key.comparisonCode))
        guard case .paired(let stored, _) = outcome else {
            Issue.record("not enrolled: \(outcome)")
            return key
        }
        #expect(stored.secret == key.secret)
        return key
    }
}

/// A suite that runs on one `PairingRig`, named for short.
protocol OnPairingRig {
    var rig: PairingRig { get }
}

extension OnPairingRig {
    var responder: PairingResponder { rig.responder }
    var keys: InMemoryKeyStore { rig.keys }
}

/// Pairing's key agreement, window and confirmation (docs/LOCK-RULES.md rules 1–3;
/// docs/SECURITY.md, "Pairing"). The attacks are in `PairingAttackTests`.
struct PairingTests: OnPairingRig {
    let rig = PairingRig()

    @Test func bothSidesDeriveOneKeyWithWhatTheLockGranted() throws {
        var outcome: PairingOutcome?
        rig.open(PairingOffer(role: .admin, mayRequestArrivalUnlock: false)) { outcome = $0 }
        let key = try rig.pair(rig.phone("alice's phone"))
        #expect(key.keyID == 1 && key.role == .admin && !key.mayRequestArrivalUnlock)
        #expect(key.lockFingerprint == rig.identity.fingerprint)
        let stored = try #require(keys.key(id: 1))
        #expect(stored.name == "alice's phone" && stored.role == .admin && !stored.mayRequestArrivalUnlock)
        #expect(outcome == .paired(stored, comparisonCode: key.comparisonCode), "the lock shows the same code")
        #expect(key.comparisonCode.count == 6 && key.comparisonCode.allSatisfy(\.isNumber))
        #expect(!responder.isOpen)
    }

    @Test func theKeyWaitsForTheOwnersConfirmationInNoKeyStore() throws {
        var asked: PendingPairing?
        var outcome: PairingOutcome?
        #expect(responder.open(for: .seconds(60), offer: PairingOffer(role: .user), asked: { asked = $0 }) { outcome = $0 })
        let (key, pending) = try rig.exchange(rig.phone())
        #expect(asked == pending, "the owner is shown the code")
        #expect(keys.keys.isEmpty, "nothing authorises this key yet")
        #expect(outcome == nil && responder.pending == pending)
        // The window's own time does not end a pending confirmation; the confirmation's does.
        rig.loop.advance(by: PairingResponder.confirmationTimeout - .seconds(1))
        #expect(responder.confirm(code: key.comparisonCode) == .paired(pending.key, comparisonCode: key.comparisonCode))
        #expect(keys.key(id: pending.key.id) == pending.key)
        #expect(responder.confirm(code: key.comparisonCode) == nil, "once")
    }

    @Test func arrivalUnlockIsOffUnlessTheOwnerAsksAndNeverForAUserKey() throws {
        rig.open(PairingOffer(role: .admin))
        #expect(try !rig.pair(rig.phone("default"), on: LinkID(11)).mayRequestArrivalUnlock, "off by default")
        rig.open(PairingOffer(role: .admin, mayRequestArrivalUnlock: true))
        #expect(try rig.pair(rig.phone("owner"), on: LinkID(12)).mayRequestArrivalUnlock, "an admin's explicit opt-in")
        // A user (guest) offer that asks for it anyway is granted without it, on both sides.
        rig.open(PairingOffer(role: .user, mayRequestArrivalUnlock: true))
        let guest = try rig.pair(rig.phone("guest"), on: LinkID(13))
        #expect(!guest.mayRequestArrivalUnlock && keys.key(id: guest.keyID)?.mayRequestArrivalUnlock == false)
        #expect(arrivalUnlockRefusal(role: .user, arrival: true)?.contains("only an admin key") == true)
        #expect(arrivalUnlockRefusal(role: .admin, arrival: true) == nil)
    }

    @Test func writesOutsideAWindowAreRefused() throws {
        let phone = rig.phone("x")
        #expect(responder.handleRequest(phone.request.bytes, on: rig.link) == .failure(.pairingClosed))
        var outcome: PairingOutcome?
        rig.open(for: .seconds(60)) { outcome = $0 }
        rig.loop.advance(by: .seconds(60))
        #expect(outcome == .closedUnused)
        #expect(responder.handleRequest(phone.request.bytes, on: LinkID(6)) == .failure(.pairingClosed))
        #expect(keys.keys.isEmpty)
    }

    @Test func aWindowAdmitsOnePhone() throws {
        rig.open()
        let first = try rig.exchange(rig.phone("first"))
        let second = rig.phone("second")
        #expect(responder.handleRequest(second.request.bytes, on: LinkID(6)) == .failure(.pairingClosed),
                "shut while a key waits for its confirmation")
        _ = responder.confirm(code: first.phone.comparisonCode)
        #expect(responder.handleRequest(second.request.bytes, on: LinkID(7)) == .failure(.pairingClosed))
        #expect(keys.keys.count == 1)
    }

    @Test func everyPhoneGetsItsOwnKeyAndId() throws {
        rig.open()
        let a = try rig.pair(rig.phone("a"))
        rig.open()
        let b = try rig.pair(rig.phone("b"), on: LinkID(6))
        #expect(a.keyID != b.keyID)
        #expect(a.secret != b.secret, "no shared static key")
    }

    @Test func theConfirmationCoversWhatTheLockGranted() throws {
        rig.open(PairingOffer(role: .user))
        let phone = rig.phone()
        _ = try responder.handleRequest(phone.request.bytes, on: rig.link).get()
        let genuine = try PairingResponse(decoding: try #require(responder.response(for: rig.link)))
        var promoted = genuine
        promoted.role = 1  // an attacker in the middle making the phone believe it is admin
        var renumbered = genuine
        renumbered.keyID = 7
        var reNonced = genuine
        reNonced.nonce[0] ^= 1
        for forged in [promoted, renumbered, reNonced] {
            #expect(throws: PairingFailure.confirmationFailed) { try phone.complete(forged.bytes) }
        }
        #expect(throws: Never.self) { try phone.complete(genuine.bytes) }
    }

    @Test func theFingerprintIs128BitsAndMandatory() throws {
        #expect(rig.identity.fingerprint.count == 39, "eight groups of four hex digits")
        #expect(throws: PairingSetupError.badFingerprint("1a2b-3c4d-5e6f-7081")) {
            try PairingInitiator(name: "p", expectedFingerprint: "1a2b-3c4d-5e6f-7081")  // the old 64-bit form
        }
        #expect(throws: PairingSetupError.self) { try PairingInitiator(name: "p", expectedFingerprint: "") }
        let written = String(rig.identity.fingerprint.uppercased().map { $0 == "-" ? ":" : $0 })
        rig.open()
        #expect(throws: Never.self) { try rig.pair(rig.phone(pinning: written)) }
    }

    @Test func malformedAndLowOrderRequestsAreRefusedAndLeaveTheWindowOpen() throws {
        rig.open()
        let good = rig.phone().request.bytes
        // One link per write: the per-link limit is `PairingAttackTests`' business.
        for n in 0..<good.count {
            #expect(responder.handleRequest(Array(good.prefix(n)), on: LinkID(100 + UInt64(n))) == .failure(.malformed))
        }
        #expect(responder.handleRequest(good + [0], on: LinkID(99)) == .failure(.malformed))
        let zero = PairingRequest(phonePublicKey: Array(repeating: 0, count: 32), nonce: Array(repeating: 0, count: 16),
                                  name: "evil").bytes
        #expect(responder.handleRequest(zero, on: LinkID(98)) == .failure(.malformed), "an all-zero shared secret")
        #expect(responder.isOpen && responder.pending == nil)
        #expect(keys.keys.isEmpty)
    }

    @Test func aKeyThatCannotBeStoredIsNotEnrolledAndTheOwnerIsTold() throws {
        var outcome: PairingOutcome?
        rig.open { outcome = $0 }
        let (key, pending) = try rig.exchange(rig.phone())
        keys.failWrites = true
        #expect(responder.confirm(code: key.comparisonCode) == .notEnrolled(pending, .storageFailure))
        #expect(outcome == .notEnrolled(pending, .storageFailure))
        #expect(keys.keys.isEmpty && !responder.isOpen)
    }

    @Test func framesDecodeStrictly() throws {
        let request = PairingRequest(phonePublicKey: Array(repeating: 9, count: 32), nonce: Array(repeating: 4, count: 16),
                                     name: String(repeating: "é", count: 40))
        #expect(request.name.utf8.count <= 32, "a long name is cut at a character boundary")
        #expect(try PairingRequest(decoding: request.bytes) == request)
        var badName = request.bytes
        badName[51] = 0xFF
        #expect(throws: LockProtocolError.self) { try PairingRequest(decoding: badName) }
        var version1 = request.bytes
        version1[0] = 1
        #expect(throws: LockProtocolError.self, "the nonce-less version 1") { try PairingRequest(decoding: version1) }
        let response = PairingResponse(lockIdentityKey: Array(repeating: 1, count: 32), lockPublicKey: Array(repeating: 2, count: 32),
                                       nonce: Array(repeating: 5, count: 16), keyID: 0x0102_0304, role: 1, flags: 1,
                                       confirmation: Array(repeating: 3, count: 16))
        #expect(try PairingResponse(decoding: response.bytes) == response)
        for (offset, value) in [(86, UInt8(2)), (87, UInt8(2)), (0, UInt8(1)), (1, UInt8(0x10))] {
            var b = response.bytes
            b[offset] = value
            #expect(throws: LockProtocolError.self, "octet \(offset)") { try PairingResponse(decoding: b) }
        }
    }

    @Test func theBeaconCarriesTheFingerprintAndNothingElseLooksLikeIt() throws {
        let octets = PairingKeyAgreement.fingerprintOctets(of: rig.identity.publicKey)
        let beacon = PairingBeacon(fingerprint: octets)
        #expect(beacon.manufacturerData.count <= 29, "fits a scan response with its AD header")
        #expect(PairingBeacon(manufacturerData: beacon.manufacturerData) == beacon)
        #expect(beacon.fingerprintText == rig.identity.fingerprint)
        var closed = beacon.manufacturerData
        closed[4] = 0
        #expect(PairingBeacon(manufacturerData: closed) == nil, "no window, no beacon")
        #expect(PairingBeacon(manufacturerData: [0x4C, 0x00] + Array(beacon.manufacturerData.dropFirst(2))) == nil,
                "another company's data")
    }
}
