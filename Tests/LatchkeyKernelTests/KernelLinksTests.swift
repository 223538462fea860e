#if canImport(Glibc)
import Glibc
#endif
import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `KernelLinks` on its own, without a transport: socketpairs for the links, a host that
/// says which claims are due and records what it is told.
@Suite struct KernelLinksTests {
    final class Host: KernelLinksHost {
        var isAttached = true
        var due: Set<BluetoothAddress> = []
        var claims = true
        let application = RecordingDelegate()
        var offered: [KernelLink] = []
        var claimed: [LinkID] = []
        var ended: [(LinkID, Errno?)] = []
        var disconnected: [BluetoothAddress] = []
        var reports: [KernelError] = []

        func claimIsDue(_ peer: BluetoothAddress) -> Bool { due.contains(peer) }
        func offer(_ link: KernelLink) {
            offered.append(link)
            if claims { link.delegate = application }
        }
        func linkClaimed(_ link: KernelLink) { claimed.append(link.id) }
        func linkEnded(_ link: KernelLink, errno: Errno?) -> DisconnectReason {
            ended.append((link.id, errno))
            return .remoteUserTerminated
        }
        func disconnect(_ peer: BluetoothAddress, answered: @escaping () -> Void) -> Bool {
            disconnected.append(peer)
            answered()
            return true
        }
        func report(_ error: KernelError) { reports.append(error) }
    }

    static let local = BluetoothAddress(string: "C0:FF:EE:00:00:01")!
    let loop = PosixEventLoop()
    let sockets = FakeLinkSockets()
    let hciEvents = FakeHCIEvents()
    let host = Host()
    let links: KernelLinks

    init() {
        links = KernelLinks(address: Self.local, sockets: sockets, hciEvents: hciEvents, loop: loop, store: nil)
        links.host = host
    }

    func until(_ condition: @escaping () -> Bool) throws {
        #expect(try loop.run(until: condition, timeout: .seconds(2)))
    }

    @Test func anIncomingLinkIsOfferedHeldWithItsTimingAndSaidToBeClaimed() throws {
        try links.openListener()
        #expect(links.watchTiming(on: TransportWorld.hci0) == nil)
        #expect(hciEvents.emit(KernelTransportConnectionTimingTests.complete(units: 24)))
        try until { links.timing(of: TransportWorld.phone) != nil }
        #expect(sockets.listened == [Self.local])
        _ = try #require(sockets.listener).push(TransportWorld.phone)
        try until { !host.offered.isEmpty }
        let link = try #require(links.connected.first)
        #expect(link.role == .peripheral && link.peer == TransportWorld.phone)
        #expect(link.connectionInterval == .microseconds(30_000))
        #expect(host.claimed == [link.id] && links.hasPeripheralLink && links.holdsSocket(for: TransportWorld.phone))
        #expect(links.peer(ofHandle: 0x40) == TransportWorld.phone.value)
    }

    @Test func anUnclaimedLinkIsClosedAndNotHeld() throws {
        host.claims = false
        try links.openListener()
        _ = try #require(sockets.listener).push(TransportWorld.phone)
        try until { !host.offered.isEmpty }
        #expect(links.connected.isEmpty && host.claimed.isEmpty)
        #expect(host.offered.first?.isConnected == false)
    }

    @Test func noListenerWhileDetached() throws {
        host.isAttached = false
        try links.openListener()
        #expect(sockets.listened.isEmpty)
    }

    @Test func aClaimIsMadeOnTheNextTurnOnlyWhenDue() throws {
        links.claimSoon(TransportWorld.lock)
        _ = try loop.run(until: { false }, timeout: .milliseconds(20))
        #expect(sockets.claims == 0, "not due: no ATT channel opened")
        host.due = [TransportWorld.lock]
        links.claimSoon(TransportWorld.lock)
        #expect(sockets.claims == 0, "not inside the caller's turn")
        try until { !links.connected.isEmpty }
        #expect(links.connected.first?.role == .central && sockets.claims == 1)
        links.claimSoon(TransportWorld.lock)
        _ = try loop.run(until: { false }, timeout: .milliseconds(20))
        #expect(sockets.claims == 1, "held already: not claimed twice")
    }

    @Test func theApplicationEndingALinkAsksTheKernelToDisconnect() throws {
        host.due = [TransportWorld.lock]
        links.claimSoon(TransportWorld.lock)
        try until { !links.connected.isEmpty }
        let link = try #require(links.connected.first)
        link.disconnect()
        #expect(host.disconnected == [TransportWorld.lock])
        #expect(links.connected.isEmpty && !links.holdsSocket(for: TransportWorld.lock))
        #expect(host.ended.isEmpty, "ended by us: not a loss")
    }

    @Test func aLinkLostUnderUsIsNoLongerHeldAndTheHostGivesTheReason() throws {
        host.due = [TransportWorld.lock]
        links.claimSoon(TransportWorld.lock)
        try until { !links.connected.isEmpty }
        Glibc.close(try #require(sockets.peerEnds[TransportWorld.lock]))
        try until { !host.ended.isEmpty }
        #expect(links.connected.isEmpty)
        #expect(host.application.disconnects == [.remoteUserTerminated])
    }

    @Test func closingWithoutAStoreDropsEveryLinkAndWaitsForNothing() throws {
        host.due = [TransportWorld.lock]
        links.claimSoon(TransportWorld.lock)
        try until { !links.connected.isEmpty }
        let link = try #require(links.connected.first)
        #expect(links.endAll(canDisconnect: true).isEmpty)
        #expect(!link.isConnected && links.connected.isEmpty)
        #expect(host.disconnected.isEmpty, "without a store the kernel ends the link once our socket is closed")
    }
}
