import LatchkeyEvents
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
@testable import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// `StatusPublisher` on its own: the state goes only to links with a session, sealed, and what
/// a full queue refused goes again when there is room.
@Suite struct StatusPublisherTests {
    let loop = ManualEventLoop()
    let secret = CommandSealing.newSecret()
    let phone = FakeLink(1), stranger = FakeLink(2)
    private let wire = StatusWire()
    let links: LinkRegistry<FakeLink>
    let status: StatusPublisher<FakeLink>

    init() {
        let (wire, phone, stranger) = (wire, phone, stranger)
        links = LinkRegistry(loop: loop, unauthenticatedLinkTimeout: .seconds(5), emit: { wire.events.append($0.name) },
                             liveLinks: { [phone, stranger] }, disconnect: { _ in })
        status = StatusPublisher(links: links, frame: { LockStatusFrame(lockState: 1, doorState: 1, operatingMode: 0,
                                                                         actuatorEnabled: true, lastEventSequence: 7) },
                                 subscribers: { [phone, stranger] },
                                 send: { link, sealed in
                                     guard wire.room > 0 else { return false }
                                     wire.room -= 1
                                     wire.sent.append((link.linkID, sealed))
                                     return true
                                 }, emit: { wire.events.append($0.name) })
        _ = links.adopt(LinkSession(keyID: 1, counter: 1, salt: [UInt8](repeating: 3, count: 24), secret: secret), on: phone)
        wire.events = []
    }

    @Test func onlyTheLinkWithASessionHearsTheStateSealedToIt() throws {
        status.publish()
        #expect(wire.sent.map(\.0) == [phone.linkID])
        var session = LinkSession(keyID: 1, counter: 1, salt: [UInt8](repeating: 3, count: 24), secret: secret)  // the phone's
        let opened = try session.open(try #require(wire.sent.first?.1), as: .status)
        #expect(try LockStatusFrame(decoding: opened).lastEventSequence == 7)
    }

    @Test func aStrangersReadIsRefusedAndSaid() {
        guard case .failure = status.read(by: stranger) else { Issue.record("a stranger read the state"); return }
        #expect(wire.events == [EventKind.lockReadRefused.name])
        guard case .success = status.read(by: phone) else { Issue.record("the phone could not read"); return }
    }

    @Test func whatAFullQueueRefusedGoesWhenThereIsRoom() {
        wire.room = 0
        status.publish()
        #expect(wire.sent.isEmpty)
        wire.room = 10
        status.roomAgain()
        #expect(wire.sent.count == 1)
        status.roomAgain()
        #expect(wire.sent.count == 1, "nothing is left to send")
    }
}

private final class StatusWire {
    var room = 10
    var sent: [(LinkID, [UInt8])] = []
    var events: [String] = []
}
