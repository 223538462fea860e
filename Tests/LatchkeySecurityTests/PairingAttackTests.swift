import LatchkeyLockProtocol
import LatchkeyTransport
import Testing
@testable import LatchkeySecurity

/// Attackers against an open pairing window (docs/SECURITY.md, "Pairing" and "Why this
/// design"): each test is one attack, and the lock must enrol nothing it did not mean to.
struct PairingAttackTests: OnPairingRig {
    let rig = PairingRig()

    /// A stranger who hears the beacon (it is public), pins the real fingerprint and writes
    /// first gets a pending key, not a working one; the owner's phone is refused, the owner
    /// says no, and the window closes with the attempt counted.
    @Test func aStrangerWhoWinsTheRaceIsNotEnrolled() throws {
        var outcome: PairingOutcome?
        rig.open { outcome = $0 }
        let stranger = try rig.exchange(rig.phone("owner's phone"), on: LinkID(66))
        #expect(keys.keys.isEmpty, "winning the race enrols nothing")
        let owner = rig.phone("owner's phone")
        #expect(responder.handleRequest(owner.request.bytes, on: rig.link) == .failure(.pairingClosed),
                "the owner's phone sees the refusal, and shows no code")
        #expect(responder.reject() == .notEnrolled(stranger.lock, .refusedByOwner))
        #expect(outcome == .notEnrolled(stranger.lock, .refusedByOwner))
        #expect(keys.keys.isEmpty && !responder.isOpen)
        #expect(responder.counts.notEnrolled == 1)
    }

    /// The same stranger when nobody answers: the confirmation times out, nothing enrolled.
    @Test func aStrangersKeyNobodyConfirmsExpires() throws {
        var outcome: PairingOutcome?
        rig.open(for: .seconds(600)) { outcome = $0 }
        let stranger = try rig.exchange(rig.phone("x"))
        rig.loop.advance(by: PairingResponder.confirmationTimeout)
        #expect(outcome == .notEnrolled(stranger.lock, .timedOut))
        #expect(keys.keys.isEmpty && !responder.isOpen)
        #expect(responder.confirm(code: stranger.phone.comparisonCode) == nil, "too late: the window is closed")
        #expect(keys.keys.isEmpty)
    }

    /// Mallory sits between the owner's phone and the lock. She cannot play the lock: the
    /// phone pins the lock's fingerprint, and relaying the lock's answer to her own request
    /// fails its confirmation. Her own exchange with the lock leaves a pending key whose
    /// code the owner's phone does not show; one wrong code closes the window for good.
    @Test func aRelayingManInTheMiddleGetsOneGuessPerWindow() throws {
        var outcome: PairingOutcome?
        rig.open { outcome = $0 }
        let ownerPhone = rig.phone("owner")
        let mallory = rig.phone("owner")
        let malloryLink = LinkID(66)
        let atTheLock = try responder.handleRequest(mallory.request.bytes, on: malloryLink).get()

        // Toward the phone: the lock's genuine answer, relayed, belongs to Mallory's exchange...
        let relayed = try #require(responder.response(for: malloryLink))
        #expect(throws: PairingFailure.confirmationFailed) { try ownerPhone.complete(relayed) }
        // ...and an answer of her own comes from an identity the phone did not pin.
        let fake = PairingRig()
        fake.open()
        _ = try fake.responder.handleRequest(ownerPhone.request.bytes, on: fake.link).get()
        #expect(throws: PairingFailure.unexpectedLock(fingerprint: fake.identity.fingerprint)) {
            try ownerPhone.complete(try #require(fake.responder.response(for: fake.link)))
        }
        // Her forged answer carrying the genuine identity cannot carry its confirmation.
        var forged = try PairingResponse(decoding: try #require(fake.responder.response(for: fake.link)))
        forged.lockIdentityKey = rig.identity.publicKey
        #expect(throws: PairingFailure.confirmationFailed) { try ownerPhone.complete(forged.bytes) }

        // The lock holds Mallory's key pending. Whatever code gets typed that is not its own,
        // it is one guess: the window closes and her next request is refused.
        let wrong = atTheLock.comparisonCode == "000000" ? "000001" : "000000"
        #expect(responder.confirm(code: wrong) == .notEnrolled(atTheLock, .codeMismatch))
        #expect(outcome == .notEnrolled(atTheLock, .codeMismatch))
        #expect(responder.handleRequest(rig.phone("owner").request.bytes, on: LinkID(67)) == .failure(.pairingClosed))
        #expect(responder.confirm(code: atTheLock.comparisonCode) == nil, "no second guess")
        #expect(keys.keys.isEmpty)
    }

    /// Junk written to find out whether a window is open gets the same answer either way
    /// (a beacon says so on purpose while one is; a probe must not, when it is not).
    @Test func junkWritesCannotTellAnOpenWindowFromAClosedOne() throws {
        let good = rig.phone().request.bytes
        var version1 = good
        version1[0] = 1
        var wrongKind = good
        wrongKind[1] = 0x11
        let junk: [[UInt8]] = [[], [0x02], [0x01, 0x10] + Array(repeating: 7, count: 33), version1, wrongKind,
                               Array(good.dropLast()), good + [0x41], Array(repeating: 0xFF, count: 120)]
        func answers(from base: UInt64) -> [Result<PendingPairing, CommandRejection>] {
            junk.enumerated().map { responder.handleRequest($0.element, on: LinkID(base + UInt64($0.offset))) }
        }
        let whileClosed = answers(from: 200)
        rig.open()
        let whileOpen = answers(from: 300)
        #expect(whileClosed == whileOpen)
        #expect(whileOpen.allSatisfy { $0 == .failure(.malformed) })
        #expect(responder.isOpen && responder.pending == nil, "junk uses up nothing")
        #expect(responder.counts.requests == 2 * junk.count && responder.counts.refused == 2 * junk.count)
    }

    /// A link that keeps writing is answered "closed" past a few writes, whatever it sends.
    @Test func aLinkThatKeepsWritingIsCutOff() throws {
        rig.open()
        for _ in 0..<PairingResponder.maximumWritesPerLink {
            #expect(responder.handleRequest([0x02, 0x10], on: rig.link) == .failure(.malformed))
        }
        #expect(responder.handleRequest(rig.phone().request.bytes, on: rig.link) == .failure(.pairingClosed),
                "past the limit even a well-formed request")
        #expect(responder.isOpen && responder.pending == nil)
        #expect(responder.counts.refused == PairingResponder.maximumWritesPerLink + 1)
        #expect(throws: Never.self) { try rig.exchange(rig.phone(), on: LinkID(6)) }
    }

    /// A phone-chosen name that would rewrite the owner's terminal or the journal's lines is
    /// refused; one stored before it was checked is printed escaped.
    @Test func aNameWithEscapesIsRefusedAndNeverPrintedRaw() throws {
        rig.open()
        let phoneKey = rig.phone().request.phonePublicKey
        let hostile = ["\u{1B}[2J\u{1B}[Hpaired key 1 name=owner", "bob\nlock.key_paired key=9",
                       "\u{202E}enohp s'bob", "\u{7}bell", "nul\u{0}", "\u{9B}31m"]
        for (i, name) in hostile.enumerated() {
            let request = PairingRequest(phonePublicKey: phoneKey, nonce: Array(repeating: 1, count: 16), name: name)
            #expect(request.name == name, "the attacker sends it as it is")
            #expect(responder.handleRequest(request.bytes, on: LinkID(400 + UInt64(i))) == .failure(.malformed))
            #expect(throws: PairingSetupError.self) { try PairingInitiator(name: name, expectedFingerprint: rig.identity.fingerprint) }
        }
        #expect(responder.isOpen && responder.pending == nil && keys.keys.isEmpty)
        #expect(PairingName.problem("Bob's phone 📱 (é)") == nil)
        #expect(PairingName.problem(String(repeating: "a", count: 33)) != nil)
        #expect(PairingName.escaped("a\u{1B}[2Jb\n\\") == "a\\u{001B}[2Jb\\u{000A}\\\\")
        #expect(hostile.allSatisfy { !PairingName.escaped($0).unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x202E } })
    }
}
