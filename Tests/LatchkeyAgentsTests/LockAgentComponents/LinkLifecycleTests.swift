import LatchkeyEvents
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// What the lifecycle told the lock's other components, in order.
private final class Neighbours {
    var up: [FakeLink] = []
    var events: [String] = []
    var disconnected: [LinkID] = []
    var calls: [String] = []
    var subscribedToState: Set<LinkID> = []
}

/// `LinkLifecycle` on its own, over a real `LinkRegistry` and `PreservedBindings`: a stranger is
/// timed from its connection, a session and a binding follow what was proven, a link's loss
/// ends what it held, and a key that is no longer current ends everything it holds.
@Suite struct LinkLifecycleTests {
    let loop = ManualEventLoop()
    let secret = CommandSealing.newSecret()
    let storage = InMemoryRestorationStorage()
    private let air = Neighbours()
    let links: LinkRegistry<FakeLink>
    let lifecycle: LinkLifecycle<FakeLink>

    init() {
        let air = air
        links = LinkRegistry(loop: loop, unauthenticatedLinkTimeout: .seconds(5), emit: { air.events.append($0.name) },
                             liveLinks: { air.up }, disconnect: { air.disconnected.append($0.linkID) })
        let hooks = LinkLifecycleHooks<FakeLink>(
            slotsChanged: { air.calls.append("slots") },
            forgetChallenge: { air.calls.append("challenge \($0.rawValue)") },
            forgetPairing: { air.calls.append("pairing \($0.rawValue)") },
            endTransfer: { air.calls.append("transfer \($0.rawValue)") },
            linkEnded: { air.calls.append("ended \($0.rawValue) bound \($1.map { "\($0)" } ?? "none")") },
            keyEnded: { air.calls.append("key ended \($0)") },
            phoneIsHere: { air.calls.append("here \($0)") },
            linkBound: { air.calls.append("watched") },
            subscribedToState: { air.subscribedToState.contains($0.linkID) },
            tellState: { air.calls.append("told \($0.linkID.rawValue)") })
        lifecycle = LinkLifecycle(links: links, bindings: PreservedBindings(storage: storage, emit: { air.events.append($0.name) }),
                                  hooks: hooks, emit: { air.events.append($0.name) })
    }

    func connect(_ id: UInt64) -> FakeLink {
        let link = FakeLink(id)
        air.up.append(link)
        lifecycle.connected(link)
        return link
    }

    func session(key: UInt32) -> LinkSession {
        LinkSession(keyID: key, counter: 1, salt: [UInt8](repeating: 7, count: 24), secret: secret)
    }

    @Test func aStrangersLinkIsDroppedWhenItProvesNothingInTime() {
        let stranger = connect(1)
        #expect(air.events == [EventKind.lockCentralConnected.name])
        #expect(air.calls == ["slots"])
        loop.advance(by: .seconds(5) + LinkRegistry<FakeLink>.dropDelay)
        #expect(air.events.last == EventKind.lockLinkDropped.name)
        #expect(air.disconnected == [stranger.linkID])
    }

    @Test func aSessionKeepsTheLinkAndASubscribedPhoneHearsTheStateAtOnce() {
        let phone = connect(1)
        air.subscribedToState = [phone.linkID]
        air.calls = []
        lifecycle.adopt(session(key: 3), on: phone)
        #expect(air.calls == ["watched", "told 1"])
        #expect(links.sessionKey(on: phone.linkID) == 3)
        loop.advance(by: .seconds(10))
        #expect(air.disconnected.isEmpty, "a link with a session is no stranger's")
    }

    @Test func noSessionOpensNothing() {
        let phone = connect(1)
        air.calls = []
        lifecycle.adopt(nil, on: phone)
        #expect(air.calls.isEmpty)
        #expect(!links.hasSession(phone.linkID))
    }

    @Test func aBoundPhoneIsHereAndItsBindingOutlivesTheAgent() {
        let phone = connect(1)
        air.calls = []
        lifecycle.bind(phone, to: 3)
        #expect(air.calls == ["watched", "here 3"])
        #expect(PreservedBindings(storage: storage, emit: { _ in }).stored() == [phone.identifier.description: 3])
        #expect(links.keysInUse == [3])
    }

    @Test func aLostLinkEndsWhatItHeldAndStartsItsPhonesDeparture() {
        let phone = connect(1)
        lifecycle.adopt(session(key: 3), on: phone)
        lifecycle.bind(phone, to: 3)
        air.calls = []
        air.events = []
        air.up = []
        lifecycle.disconnected(phone, reason: .remoteUserTerminated)
        #expect(air.events == [EventKind.lockCentralDisconnected.name])
        #expect(air.calls == ["challenge 1", "slots", "pairing 1", "transfer 1", "ended 1 bound 3"])
        #expect(!links.hasSession(phone.linkID) && links.keysInUse.isEmpty)
    }

    @Test func aStrangerMayNotSubscribeToWhatIsForSessionsOnly() {
        let stranger = connect(1)
        air.events = []
        #expect(lifecycle.subscriptionRefusal(stranger, forSessions: true) == .noSession)
        #expect(air.events == [EventKind.lockSubscriptionRefused.name])
        #expect(lifecycle.subscriptionRefusal(stranger, forSessions: false) == nil)
        air.calls = []
        lifecycle.subscribed(stranger, toState: true)
        #expect(air.calls.isEmpty, "a stranger hears nothing of the lock's state")
    }

    @Test func aPhoneWithASessionMaySubscribeAndHearsTheState() {
        let phone = connect(1)
        lifecycle.adopt(session(key: 3), on: phone)
        air.events = []
        air.calls = []
        #expect(lifecycle.subscriptionRefusal(phone, forSessions: true) == nil)
        lifecycle.subscribed(phone, toState: true)
        #expect(air.calls == ["told 1"])
        #expect(air.events.isEmpty)
    }

    @Test func aKeyNoLongerCurrentEndsItsLinksTransfersBindingAndArrival() {
        let phone = connect(1)
        let other = connect(2)
        lifecycle.adopt(session(key: 3), on: phone)
        lifecycle.bind(phone, to: 3)
        lifecycle.adopt(session(key: 4), on: other)
        air.calls = []
        air.events = []
        lifecycle.keyNoLongerCurrent(3)
        #expect(air.calls == ["transfer 1", "key ended 3"])
        #expect(air.events == [EventKind.lockLinkDropped.name, EventKind.lockKeyEnded.name])
        #expect(PreservedBindings(storage: storage, emit: { _ in }).stored()?[phone.identifier.description] == nil)
        loop.advance(by: LinkRegistry<FakeLink>.dropDelay)
        #expect(air.disconnected == [phone.linkID], "the other key's link stays")
    }

    @Test func aKeyWithNothingLiveEndsQuietly() {
        lifecycle.keyNoLongerCurrent(9)
        #expect(air.calls == ["key ended 9"])
        #expect(air.events.isEmpty)
    }
}
