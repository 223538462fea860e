import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// `PairingDesk` on its own: what a window, a request and each end say and leave in the
/// audit log, and when the advertising and the asking link must change.
@Suite struct PairingDeskTests {
    let loop = ManualEventLoop()
    let keys = InMemoryKeyStore()
    let identity = try! LockIdentity(rawPrivateKey: LockIdentity.newRawPrivateKey())
    let link = LinkID(3)
    let address = BluetoothAddress(0xC0_00_00_00_00_03, kind: .random)
    private let heard = Heard()
    let desk: PairingDesk

    init() {
        let heard = heard
        desk = PairingDesk(responder: PairingResponder(identity: identity, registry: keys, loop: loop),
                           emit: { heard.events.append($0.name) }, logSecurity: { heard.log.append($0) },
                           advertise: { heard.advertised += 1 }, notEnrolled: { heard.strangersAgain.append($0) })
    }

    /// A phone's request, answered; the phone checks the answer and shows its code.
    func ask() throws -> (key: UInt32, code: String) {
        let phone = try PairingInitiator(name: "kitchen", expectedFingerprint: identity.fingerprint)
        let key = try desk.request(phone.request.bytes, on: link, from: address).get()
        let paired = try phone.complete(try #require(desk.response(for: link)))
        return (key, paired.comparisonCode)
    }

    @Test func aConfirmedKeyIsAUserChangeInTheLog() throws {
        var outcome: PairingOutcome?
        #expect(desk.open(for: .seconds(60), offer: PairingOffer(role: .user), asked: { _ in }, done: { outcome = $0 }))
        #expect(desk.beacon != nil, "the window takes a request: the beacon is out")
        let (key, code) = try ask()
        #expect(desk.beacon == nil, "a key waits: no more requests")
        _ = desk.confirm(code: code)
        guard case .paired(let stored, _) = outcome else { Issue.record("\(String(describing: outcome))"); return }
        #expect(stored.id == key && keys.key(id: key) != nil)
        #expect(heard.events == [EventKind.lockPairingOpen.name, EventKind.lockPairingPending.name,
                                 EventKind.lockKeyPaired.name])
        guard case .lockUserChange = heard.log.first else { Issue.record("\(heard.log)"); return }
        #expect(heard.advertised == 3, "at the opening, the pending key and the end")
    }

    @Test func aRejectedKeyIsAnAttemptInTheLogAndItsLinkAStrangersAgain() throws {
        _ = desk.open(for: .seconds(60), offer: PairingOffer(role: .user), asked: { _ in }, done: { _ in })
        let (key, _) = try ask()
        _ = desk.reject()
        #expect(heard.strangersAgain == [key])
        #expect(keys.key(id: key) == nil)
        guard case .lockOperationError(_, .pairingNotConfirmed) = heard.log.first else { Issue.record("\(heard.log)"); return }
        #expect(heard.events.last == EventKind.lockPairingNotEnrolled.name)
    }

    @Test func aRequestOutsideAWindowIsRefusedAndSaid() throws {
        let phone = try PairingInitiator(name: "hall", expectedFingerprint: identity.fingerprint)
        #expect(desk.request(phone.request.bytes, on: link, from: address) == .failure(.pairingClosed))
        #expect(heard.events == [EventKind.lockPairingRefused.name])
        #expect(desk.counts.refused == 1)
    }

    @Test func aWindowClosedUnusedLeavesNothingInTheLog() {
        _ = desk.open(for: .seconds(60), offer: PairingOffer(role: .user), asked: { _ in }, done: { _ in })
        desk.close()
        #expect(heard.events.last == EventKind.lockPairingClosed.name)
        #expect(heard.log.isEmpty)
    }

    @Test func aLockWithoutPairingRefusesEverything() {
        let none = PairingDesk(responder: nil, emit: { _ in }, logSecurity: { _ in }, advertise: {}, notEnrolled: { _ in })
        #expect(!none.open(for: .seconds(60), offer: PairingOffer(role: .user), asked: { _ in }, done: { _ in }))
        #expect(none.request([1], on: link, from: address) == .failure(.pairingClosed))
        #expect(none.beacon == nil && none.fingerprint == nil)
    }
}

private final class Heard {
    var events: [String] = []
    var log: [LockEvent.Kind] = []
    var advertised = 0
    var strangersAgain: [UInt32] = []
}
