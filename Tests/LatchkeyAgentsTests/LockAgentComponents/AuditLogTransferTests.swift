import LatchkeyATT
import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// A link for the lock's components in their unit tests: what was kept with it, and nothing else.
final class FakeLink: LinkHandle {
    let linkID: LinkID
    let identifier: BluetoothAddress
    var maximumUpdateValueLength = 20
    var connectionInterval: Duration? = .milliseconds(30)
    var keptLinkState: [UInt8]?
    var keepFails = false
    /// `address` is another link's for an attacker sending with it.
    init(_ id: UInt64, at address: BluetoothAddress? = nil) {
        linkID = LinkID(id)
        identifier = address ?? BluetoothAddress(0xC0_00_00_00_00_00 + id, kind: .random)
    }
    func keepLinkState(_ state: [UInt8]) throws(TransportError) -> Bool {
        if keepFails { throw TransportError(.failed, "the descriptor store is full") }
        keptLinkState = state
        return true
    }
}

/// `AuditLogTransfer` on its own: what a key may read goes out in chunks as the link has room.
@Suite struct AuditLogTransferTests {
    let loop = ManualEventLoop()
    let log = InMemoryLockEventLog()
    let link = FakeLink(1)
    private let wire = Wire()
    let transfer: AuditLogTransfer<FakeLink>

    init() throws {
        let (wire, link) = (wire, link)
        transfer = AuditLogTransfer(log: log, loop: loop, emit: { wire.events.append($0.name) },
                               subscribers: { wire.subscribed ? [link] : [] },
                               send: { _, chunk in
                                   guard wire.room > 0 else { return false }
                                   wire.room -= 1
                                   wire.chunks.append(chunk)
                                   return true
                               })
        // Three events: keys 1, 2, 1.
        for key: UInt32 in [1, 2, 1] {
            let record = LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(key))
            _ = try log.append(LockEvent(kind: .lockOperation(record), time: loop.now, lockStateBefore: .locked,
                                     lockStateAfter: .unlocked, doorState: .closed))
        }
    }

    /// The reply as the phone reassembles it (the "seal" here is the identity).
    func received() throws -> [UInt32] {
        var assembler = ChunkAssembler()
        var value: [UInt8]?
        for chunk in wire.chunks { value = try assembler.receive(chunk) }
        let whole = try #require(value)
        let records = try #require(LogTransferRecord.split(whole))
        return records.map(\.sequence)
    }

    @Test func aGuestReadsOnlyTheEventsNamingItsKey() throws {
        #expect(transfer.start(LogRequest(fromSequence: 1).bytes, on: link, key: 1, scope: .ownEvents, seal: { $0 }) == nil)
        loop.run()
        #expect(try received() == [1, 3])
        #expect(wire.events == [EventKind.lockLogTransfer.name])
    }

    @Test func anAdminReadsTheHouseholdsFromWhereItAsks() throws {
        #expect(transfer.start(LogRequest(fromSequence: 2).bytes, on: link, key: 1, scope: .household, seal: { $0 }) == nil)
        loop.run()
        #expect(try received() == [2, 3])
    }

    @Test func aFullQueueWaitsForRoom() throws {
        wire.room = 1
        _ = transfer.start(LogRequest(fromSequence: 1).bytes, on: link, key: 1, scope: .household, seal: { $0 })
        loop.run()
        #expect(wire.chunks.count == 1)
        wire.room = 100
        transfer.pump()
        #expect(try received() == [1, 2, 3])
    }

    @Test func anEndedLinkSendsNoMore() {
        wire.room = 0
        _ = transfer.start(LogRequest(fromSequence: 1).bytes, on: link, key: 1, scope: .household, seal: { $0 })
        transfer.end(link.linkID)
        wire.room = 100
        transfer.pump()
        #expect(wire.chunks.isEmpty)
    }

    @Test func badRequestsAreAnsweredWithTheirError() {
        #expect(transfer.start([1, 2], on: link, key: 1, scope: .household, seal: { $0 }) == .invalidAttributeValueLength)
        wire.subscribed = false
        #expect(transfer.start(LogRequest(fromSequence: 1).bytes, on: link, key: 1, scope: .household, seal: { $0 })
            == .cccdImproperlyConfigured)
        wire.subscribed = true
        #expect(transfer.start(LogRequest(fromSequence: 1).bytes, on: link, key: 1, scope: .household, seal: { _ in nil })
            == CommandRejection.noSession.attError)
        #expect(wire.events.isEmpty)
    }
}

private final class Wire {
    var subscribed = true
    var room = 100
    var chunks: [[UInt8]] = []
    var events: [String] = []
}
