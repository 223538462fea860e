import LatchkeyEvents
@testable import LatchkeyLockAgent
import LatchkeyManagers
@testable import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// `LinkRestoration` on its own: after a relaunch a phone is bound again only on a link that
/// kept its session under the key its address was bound to; an address alone proves nothing.
@Suite struct LinkRestorationTests {
    let loop = ManualEventLoop()
    let secret = CommandSealing.newSecret()
    let storage = InMemoryRestorationStorage()
    private let air = RestoredAir()

    /// The lock before its death: `phone` proved key 1 on its link and is bound to it.
    func boundBeforeTheRelaunch(_ phone: FakeLink) {
        let before = registry()
        _ = before.adopt(LinkSession(keyID: 1, counter: 1, salt: [UInt8](repeating: 7, count: 24), secret: secret), on: phone)
        PreservedBindings(storage: storage, emit: { _ in }).preserve(phone.identifier, key: 1)
    }

    func registry() -> LinkRegistry<FakeLink> {
        let air = air
        return LinkRegistry(loop: loop, unauthenticatedLinkTimeout: .seconds(5), emit: { air.events.append($0.name) },
                            liveLinks: { air.up }, disconnect: { air.disconnected.append($0.linkID) })
    }

    /// The relaunched lock's restoration; `held` says whether key 1 is still held and current.
    func restoration(_ links: LinkRegistry<FakeLink>, held: Bool = true) -> LinkRestoration<FakeLink> {
        let (air, secret) = (air, secret)
        return LinkRestoration(links: links, bindings: PreservedBindings(storage: storage, emit: { air.events.append($0.name) }),
                               secret: { held && $0 == 1 ? secret : nil },
                               rebind: { air.rebound.append(($0.linkID, $1)) }, linkBound: { air.linkBound += 1 },
                               emit: { air.events.append($0.name) })
    }

    @Test func aPhoneWhoseSessionWasKeptOnItsLinkIsBoundAgain() {
        let phone = FakeLink(1)
        air.up = [phone]
        boundBeforeTheRelaunch(phone)
        air.events = []
        let links = registry()
        restoration(links).restore([phone])
        #expect(air.rebound.map(\.0) == [phone.linkID] && air.rebound.map(\.1) == [1])
        #expect(air.events == [EventKind.lockSessionRestored.name, EventKind.lockBindingRestored.name])
        #expect(air.linkBound == 1, "the restored session's key is watched")
        withExtendedLifetime(links) { loop.advance(by: .seconds(10)) }
        #expect(air.disconnected.isEmpty, "a link with its session is no stranger's")
    }

    @Test func anAttackerAtABoundAddressWithoutTheKeptSessionIsDropped() {
        let phone = FakeLink(1)
        boundBeforeTheRelaunch(phone)
        let impostor = FakeLink(2, at: phone.identifier)  // another link at the phone's address, nothing kept
        air.up = [impostor]
        air.events = []
        let links = registry()
        restoration(links).restore([impostor])
        #expect(air.rebound.isEmpty)
        #expect(air.events.first == EventKind.lockBindingNotRestored.name)
        #expect(air.events.contains(EventKind.lockLinkDropped.name))
        withExtendedLifetime(links) { loop.advance(by: .seconds(10)) }
        #expect(air.disconnected == [impostor.linkID])
    }

    @Test func aSessionKeptUnderARevokedKeyBindsNothingAndTheLinkIsTimedAsAStrangers() {
        let phone = FakeLink(1)
        air.up = [phone]
        boundBeforeTheRelaunch(phone)
        air.events = []
        let links = registry()
        restoration(links, held: false).restore([phone])
        #expect(air.rebound.isEmpty)
        #expect(air.events.prefix(2) == [EventKind.lockSessionNotRestored.name, EventKind.lockBindingNotRestored.name])
        withExtendedLifetime(links) { loop.advance(by: .seconds(10)) }
        #expect(air.disconnected == [phone.linkID])
    }

    @Test func aKeyWithALiveLinkAfterTheRelaunchIsWatched() {
        let phone = FakeLink(1)
        air.up = [phone]
        boundBeforeTheRelaunch(phone)
        let links = registry()
        links.bind(phone, to: 1)
        restoration(links).restore([])
        #expect(air.linkBound == 1)
    }
}

private final class RestoredAir {
    var up: [FakeLink] = []
    var events: [String] = []
    var disconnected: [LinkID] = []
    var rebound: [(LinkID, UInt32)] = []
    var linkBound = 0
}
