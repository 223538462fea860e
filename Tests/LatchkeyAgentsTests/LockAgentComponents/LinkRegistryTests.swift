import LatchkeyEvents
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// `LinkRegistry` on its own: strangers' links are dropped in time, a session is kept with its
/// link before anything is sealed under it, one link per key, a revoked key's links end.
@Suite struct LinkRegistryTests {
    let loop = ManualEventLoop()
    let secret = CommandSealing.newSecret()
    private let air = Air()
    let registry: LinkRegistry<FakeLink>

    init() {
        registry = Self.registry(loop: loop, air: air)
    }

    private static func registry(loop: ManualEventLoop, air: Air) -> LinkRegistry<FakeLink> {
        LinkRegistry(loop: loop, unauthenticatedLinkTimeout: .seconds(5), emit: { air.events.append($0.name) },
                     liveLinks: { air.up }, disconnect: { link in air.disconnected.append(link.linkID) })
    }

    func link(_ id: UInt64) -> FakeLink {
        let link = FakeLink(id)
        air.up.append(link)
        return link
    }

    func session(key: UInt32) -> LinkSession {
        LinkSession(keyID: key, counter: 1, salt: [UInt8](repeating: 7, count: 24), secret: secret)
    }

    @Test func aLinkThatProvesNothingIsDroppedAfterTheTimeout() {
        let stranger = link(1)
        registry.armUnauthenticatedTimer(for: stranger)
        loop.advance(by: .seconds(5))
        #expect(air.events == [EventKind.lockLinkDropped.name])
        #expect(air.disconnected.isEmpty, "the answer to its last frame crosses first")
        loop.advance(by: .milliseconds(200))
        #expect(air.disconnected == [stranger.linkID])
    }

    @Test func aSessionIsKeptWithItsLinkAndTheLinkStays() {
        let phone = link(1)
        registry.armUnauthenticatedTimer(for: phone)
        #expect(registry.adopt(session(key: 1), on: phone))
        #expect(!registry.adopt(session(key: 1), on: phone), "the same key's session again is not a new one")
        #expect(phone.keptLinkState != nil)
        loop.advance(by: .seconds(60))
        #expect(air.disconnected.isEmpty)
        #expect(registry.sessionKey(on: phone.linkID) == 1)
        #expect(air.events == [EventKind.lockSessionOpened.name])
    }

    @Test func nothingIsSealedUnderASequenceThatCouldNotBeKept() {
        let phone = link(1)
        #expect(registry.seal([1, 2, 3], as: .status, for: phone) == nil, "no session, nothing sealed")
        _ = registry.adopt(session(key: 1), on: phone)
        #expect(registry.seal([1, 2, 3], as: .status, for: phone) != nil)
        phone.keepFails = true
        #expect(registry.seal([1, 2, 3], as: .status, for: phone) == nil)
        #expect(air.events.last == EventKind.lockSessionNotKept.name)
    }

    @Test func aRelaunchedRegistrySealsAboveEverySequenceKept() throws {
        let phone = link(1)
        _ = registry.adopt(session(key: 1), on: phone)
        for _ in 0..<3 { _ = registry.seal([0], as: .status, for: phone) }
        let relaunched = Self.registry(loop: loop, air: air)
        relaunched.restoreSessions(for: [phone], secret: { $0 == 1 ? secret : nil })
        #expect(relaunched.sessionKey(on: phone.linkID) == 1)
        let kept = try LinkSession(kept: try #require(phone.keptLinkState), secret: secret)
        #expect(kept.sequence == 3)
        _ = relaunched.seal([0], as: .status, for: phone)
        #expect(try LinkSession(kept: try #require(phone.keptLinkState), secret: secret).sequence == 4)
    }

    @Test func aKeptSessionOfARevokedKeyIsNotRestored() {
        let phone = link(1)
        _ = registry.adopt(session(key: 1), on: phone)
        let relaunched = Self.registry(loop: loop, air: air)
        relaunched.restoreSessions(for: [phone], secret: { _ in nil })
        #expect(!relaunched.hasSession(phone.linkID))
        #expect(air.events.last == EventKind.lockSessionNotRestored.name)
    }

    @Test func aKeysNewerLinkReplacesItsOlderOne() {
        let old = link(1), new = link(2)
        _ = registry.adopt(session(key: 1), on: old)
        registry.bind(old, to: 1)
        _ = registry.adopt(session(key: 1), on: new)
        #expect(!registry.hasSession(old.linkID))
        #expect(registry.isDropping(old.linkID))
        #expect(registry.linkEnded(old.linkID) == nil, "the older link's loss is no departure")
    }

    @Test func aRevokedKeysLinksEndButItsDepartureStillCounts() {
        let phone = link(1), other = link(2)
        _ = registry.adopt(session(key: 1), on: phone)
        registry.bind(phone, to: 1)
        _ = registry.adopt(session(key: 2), on: other)
        #expect(registry.keysInUse == [1, 2])
        #expect(registry.endKey(1).map(\.linkID) == [phone.linkID])
        #expect(registry.keysInUse == [2])
        #expect(!registry.hasSession(phone.linkID))
        #expect(registry.linkEnded(phone.linkID) == 1)
    }

    @Test func aLinkWhosePairingWasNotConfirmedIsAStrangersAgain() {
        let asking = link(1)
        registry.armUnauthenticatedTimer(for: asking)
        registry.pairingWaits(on: asking, key: 9, within: .seconds(65))
        loop.advance(by: .seconds(30))
        #expect(air.events.isEmpty)
        registry.pairingNotEnrolled(key: 9)
        loop.advance(by: .seconds(5))
        #expect(air.events == [EventKind.lockLinkDropped.name])
    }

    @Test func boundAddressesAreTheLiveBindings() {
        let phone = link(1)
        registry.bind(phone, to: 4)
        #expect(registry.boundAddresses.map(\.key) == [4])
        #expect(registry.boundAddresses.map(\.address) == [phone.identifier])
        _ = registry.linkEnded(phone.linkID)
        #expect(registry.boundAddresses.isEmpty)
    }
}

private final class Air {
    var up: [FakeLink] = []
    var disconnected: [LinkID] = []
    var events: [String] = []
}

/// `PreservedBindings` on its own: bindings that cannot be read are never saved over.
@Suite struct PreservedBindingsTests {
    let storage = InMemoryRestorationStorage()
    private let air = Air()
    let bindings: PreservedBindings
    let address = BluetoothAddress(0xC0_00_00_00_00_01, kind: .random)

    init() {
        let air = air
        bindings = PreservedBindings(storage: storage, emit: { air.events.append($0.name) })
    }

    struct Full: Error {}

    @Test func aBindingIsSavedAndForgottenWithItsKey() {
        bindings.preserve(address, key: 3)
        #expect(bindings.stored() == [address.description: 3])
        bindings.forget(key: 3)
        #expect(bindings.stored() == [:])
        #expect(bindings.fault == nil)
    }

    @Test func aFullStoreIsAFaultUntilItTakesWritesAgain() {
        storage.saveFailure = Full()
        bindings.preserve(address, key: 3)
        #expect(bindings.fault != nil)
        #expect(air.events == [EventKind.lockRestorationFailed.name])
        storage.saveFailure = nil
        bindings.preserveAgain([(key: 3, address: address)])
        #expect(bindings.fault == nil)
        #expect(bindings.stored() == [address.description: 3])
    }

    /// Another state under the bindings' name: what is there cannot be read as bindings.
    struct Unreadable: PreservedState {
        static let role = RestorationRole.peripheral
        static let version: UInt32 = 1
        var other = 1
        var hasPendingWork: Bool { false }
    }

    @Test func bindingsThatCannotBeReadAreNotSavedOver() throws {
        try storage.save(Unreadable(), identifier: LockBindings.identifier)
        bindings.preserve(address, key: 3)
        #expect(bindings.fault != nil)
        #expect(bindings.stored() == nil)
        #expect(try storage.load(Unreadable.self, identifier: LockBindings.identifier) == Unreadable())
        bindings.forget(key: 3)
        #expect(try storage.load(Unreadable.self, identifier: LockBindings.identifier) == Unreadable())
    }

    @Test func withoutStorageNothingIsStoredAndNothingFails() {
        let none = PreservedBindings(storage: nil, emit: { _ in Issue.record("nothing to say") })
        none.preserve(address, key: 1)
        #expect(none.stored() == nil)
        #expect(none.fault == nil)
    }
}
