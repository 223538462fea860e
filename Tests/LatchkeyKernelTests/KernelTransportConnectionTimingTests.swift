#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMgmt
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// The lock learns each link's connection interval from the controller's LE Connection
/// Complete / Update Complete events on its raw HCI watch (the arrival rule's ceiling).
@Suite struct KernelTransportConnectionTimingTests {
    /// LE Connection Complete from the phone, handle 0x40, `units` × 1.25 ms.
    static func complete(units: UInt8) -> [UInt8] {
        let p: [UInt8] = [0x01, 0x00, 0x40, 0x00, 0x01, 0x00] + TransportWorld.phone.littleEndianBytes
            + [units, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00]
        return [0x04, 0x3E, UInt8(p.count)] + p
    }

    static func update(units: UInt8) -> [UInt8] {
        let p: [UInt8] = [0x03, 0x00, 0x40, 0x00, units, 0x00, 0x00, 0x00, 0x2A, 0x00]
        return [0x04, 0x3E, UInt8(p.count)] + p
    }

    func advertisingLock(watch: Bool = true) throws -> TransportWorld {
        let world = try TransportWorld(address: TransportWorld.lock, hciEventWatch: watch)
        try world.settle()
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try world.settle()
        return world
    }

    @Test func theWatchOpensWithAdvertisingAndTheLinkGetsTheIntervalTheCentralChose() throws {
        let world = try advertisingLock()
        #expect(world.hciEvents.openedTiming == [TransportWorld.hci0])
        world.hciEvents.emit(Self.complete(units: 24))
        try world.until { world.transport.links.timing(of: TransportWorld.phone) != nil }
        _ = try #require(world.sockets.listener).push(TransportWorld.phone)
        try world.until { world.delegate.links.count == 1 }
        #expect(world.delegate.links[0].connectionInterval == .milliseconds(30))
        // The central changes it: the link follows.
        world.hciEvents.emit(Self.update(units: 80))
        try world.until { world.delegate.links[0].connectionInterval == .milliseconds(100) }
        #expect(world.failures.isEmpty)
    }

    @Test func anEventReadAfterTheAcceptStillReachesTheLink() throws {
        let world = try advertisingLock()
        _ = try #require(world.sockets.listener).push(TransportWorld.phone)
        try world.until { world.delegate.links.count == 1 }
        #expect(world.delegate.links[0].connectionInterval == nil, "unknown until the controller says")
        world.hciEvents.emit(Self.complete(units: 40))
        try world.until { world.delegate.links[0].connectionInterval == .milliseconds(50) }
    }

    @Test func withoutTheWatchIntervalsStayUnknownAndThatIsReported() throws {
        let world = try advertisingLock(watch: false)
        #expect(world.failures.contains { $0.message.contains("connection intervals stay unknown") })
        _ = try #require(world.sockets.listener).push(TransportWorld.phone)
        try world.until { world.delegate.links.count == 1 }
        #expect(world.delegate.links[0].connectionInterval == nil)
    }

    @Test func theWatchPassesOnlyTheTimingSubevents() {
        let filter = ConnectAttemptEvent.leMetaFilter(passing: ConnectionTimingEvent.subevents)
        // LE Meta (octet 1 = 0x3E) with subevents 0x01, 0x03, 0x0A, 0x29 accepted; others dropped.
        #expect(filter.count == 3 + 4 + 2)
        #expect(filter.suffix(2) == [.drop(), .accept()])
        #expect(Set(filter[3..<7].map(\.k)) == [0x01, 0x03, 0x0A, 0x29])
    }
}
