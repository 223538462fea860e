import LatchkeyATT
import LatchkeyEvents
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
@testable import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// `LockServiceRequests` on its own: each read and write goes to the component that answers it,
/// a command or pairing request without a response is refused before it reaches one, and the log
/// goes only to a link with a session whose key the authority lets read it.
@Suite struct LockServiceRequestsTests {
    let loop = ManualEventLoop()
    let phone = FakeLink(1), stranger = FakeLink(2)
    private let asked = Asked()
    let links: LinkRegistry<FakeLink>
    let requests: LockServiceRequests<FakeLink>

    init() {
        let (asked, phone, stranger) = (asked, phone, stranger)
        links = LinkRegistry(loop: loop, unauthenticatedLinkTimeout: .seconds(5), emit: { asked.events.append($0.name) },
                             liveLinks: { [phone, stranger] }, disconnect: { _ in })
        requests = LockServiceRequests(links: links, readState: { _ in asked.calls.append("state"); return .success([1]) },
                                       challenge: { _ in asked.calls.append("challenge"); return [2] },
                                       pairingResponse: { _ in asked.pairingResponse },
                                       command: { _, _ in asked.calls.append("command"); return nil },
                                       pairing: { _, _ in asked.calls.append("pairing"); return .malformed },
                                       logScope: { asked.revoked.contains($0) ? nil : .ownEvents },
                                       startTransfer: { _, link, key, scope in
                                           asked.transfers.append((link.linkID, key, scope))
                                           return nil
                                       }, emit: { asked.events.append($0.name) })
        _ = links.adopt(LinkSession(keyID: 7, counter: 1, salt: [UInt8](repeating: 3, count: 24),
                                    secret: CommandSealing.newSecret()), on: phone)
        asked.events = []
    }

    @Test func eachReadGoesToWhatAnswersIt() {
        #expect(requests.read(LockServiceUUID.lockState, by: phone) == .success([1]))
        #expect(requests.read(LockServiceUUID.challenge, by: phone) == .success([2]))
        #expect(asked.calls == ["state", "challenge"])
        #expect(requests.read(LockServiceUUID.pairing, by: phone) == .failure(.readNotPermitted), "no pairing pending")
        asked.pairingResponse = [9]
        #expect(requests.read(LockServiceUUID.pairing, by: phone) == .success([9]))
        #expect(requests.read(LockServiceUUID.lockControl, by: phone) == .failure(.readNotPermitted))
    }

    @Test func aCommandOrPairingWithoutAResponseNeverReachesItsComponent() {
        #expect(requests.write([0], to: LockServiceUUID.lockControl, withResponse: false, by: phone) == .writeNotPermitted)
        #expect(requests.write([0], to: LockServiceUUID.pairing, withResponse: false, by: phone) == .writeNotPermitted)
        #expect(requests.write([0], to: LockServiceUUID.lockState, withResponse: true, by: phone) == .writeNotPermitted)
        #expect(asked.calls.isEmpty)
        #expect(requests.write([0], to: LockServiceUUID.lockControl, withResponse: true, by: phone) == nil)
        #expect(requests.write([0], to: LockServiceUUID.pairing, withResponse: true, by: phone)
                == CommandRejection.malformed.attError)
        #expect(asked.calls == ["command", "pairing"])
    }

    @Test func aStrangerAskingForTheLogIsRefusedAndSaid() {
        #expect(requests.write([0], to: LockServiceUUID.dataTransfer, withResponse: true, by: stranger)
                == CommandRejection.noSession.attError)
        #expect(asked.transfers.isEmpty)
        #expect(asked.events == [EventKind.lockLogRefused.name])
    }

    @Test func aRevokedKeysSessionGetsNoLog() {
        asked.revoked = [7]
        #expect(requests.write([0], to: LockServiceUUID.dataTransfer, withResponse: true, by: phone)
                == CommandRejection.unknownKey.attError)
        #expect(asked.transfers.isEmpty)
        #expect(asked.events == [EventKind.lockLogRefused.name])
    }

    @Test func aPhoneWithASessionGetsTheLogItsKeyMayRead() {
        #expect(requests.write([0], to: LockServiceUUID.dataTransfer, withResponse: true, by: phone) == nil)
        #expect(asked.transfers.count == 1)
        #expect(asked.transfers.first?.0 == phone.linkID && asked.transfers.first?.1 == 7
                && asked.transfers.first?.2 == .ownEvents)
        #expect(asked.events.isEmpty)
    }
}

private final class Asked {
    var calls: [String] = []
    var events: [String] = []
    var pairingResponse: [UInt8]?
    var revoked: Set<UInt32> = []
    var transfers: [(LinkID, UInt32, LogScope)] = []
}
