#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTestKit
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// Links kept in a descriptor store so that they outlive the agent (docs/RESTORATION.md,
/// "Links that outlive the agent"): kept from the moment they exist, adopted by the next
/// process before it re-asserts anything, and removed from the store whenever they end.
@Suite struct KernelTransportDescriptorStoreTests {
    static let door = Advertisement(data: AdvertisingData(localName: "Door"))

    func send(_ fd: CInt, _ pdu: [UInt8]) { _ = pdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) } }

    func receive(_ fd: CInt) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return n < 0 ? nil : Array(buffer.prefix(n))
    }

    /// A lock advertising with a phone linked, its link kept in `store`; the phone's end.
    func linkedLock(_ store: SimulatedDescriptorStore) throws -> (TransportWorld, any ATTLink, CInt) {
        let world = try TransportWorld(address: TransportWorld.lock, settings: [.lowEnergy, .powered], store: store)
        try world.settle()
        try world.transport.startAdvertising(Self.door)
        let far = try #require(world.sockets.listener).push(TransportWorld.phone)
        try world.until { world.delegate.links.count == 1 }
        try world.settle()
        return (world, try #require(world.delegate.links.first), far)
    }

    /// The agent is SIGKILLed: its own descriptors close, nothing is said to anyone.
    func kill(_ world: TransportWorld) {
        world.transport.links.dropAll()
    }

    @Test func aLinkIsKeptFromTheMomentItExistsUnderANameWithoutAColon() throws {
        let store = SimulatedDescriptorStore()
        let (world, link, _) = try linkedLock(store)
        #expect(store.held.map(\.name) == ["att-\(link.id.rawValue)-peripheral", "state-\(link.id.rawValue)-peripheral"])
        #expect(!store.held.contains { $0.name.contains(":") })
        #expect(world.failures.isEmpty)
    }

    /// Without the adoption, the restarted lock's sweep disconnects the link (it holds no
    /// socket for it) and the phone's request sent while the lock was dead is lost.
    @Test func aRestartedLockAdoptsTheKeptLinkUnderItsOldIdAndDoesNotSweepIt() throws {
        let store = SimulatedDescriptorStore()
        let (dead, link, far) = try linkedLock(store)
        let id = link.id
        kill(dead)
        send(far, [0x0A, 0x03, 0x00])  // a Read Request while the lock is dead
        try store.restart()

        let world = try TransportWorld(address: TransportWorld.lock, settings: [.lowEnergy, .powered], store: store,
                                       sockets: dead.sockets) { $0.connections = [TransportWorld.phone] }
        #expect(world.transport.adoptedLinks == [id])
        let adopted = try #require(world.transport.connectedLinks.first)
        #expect(adopted.id == id && adopted.peer == TransportWorld.phone && adopted.role == .peripheral)
        try world.transport.startAdvertising(Self.door)
        try world.settle()
        #expect(world.kernel.commands(.disconnect).isEmpty, "the adopted link is not swept")
        // Claimed by the manager: what the phone sent meanwhile is read, and answers go through.
        adopted.delegate = world.delegate
        try world.until { world.delegate.received.count == 1 }
        #expect(world.delegate.received == [[0x0A, 0x03, 0x00]])
        #expect(adopted.send([0x0B, 0x01]) == .sent)
        #expect(receive(far) == [0x0B, 0x01])
        // The next new link's id is past every earlier one.
        _ = try #require(world.sockets.listener).push(BluetoothAddress(string: "C0:FF:EE:00:00:03")!)
        try world.until { world.delegate.links.count == 1 }
        #expect(try #require(world.delegate.links.first).id.rawValue > id.rawValue)
        #expect(world.failures.isEmpty)
    }

    /// Without the adoption the restarted phone claims the link again: a second ATT socket.
    @Test func aRestartedPhoneAdoptsItsLinkAndOpensNoSecondATTChannel() throws {
        let store = SimulatedDescriptorStore()
        let dead = try TransportWorld(address: TransportWorld.phone, settings: [.lowEnergy, .powered], store: store)
        try dead.settle()
        try dead.transport.addPendingConnection(to: TransportWorld.lock)
        dead.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        try dead.until { dead.delegate.links.count == 1 }
        #expect(dead.sockets.claims == 1)
        #expect(store.held.map(\.name) == ["att-\(dead.delegate.links[0].id.rawValue)-central",
                                           "state-\(dead.delegate.links[0].id.rawValue)-central"])
        kill(dead)
        try store.restart()

        let world = try TransportWorld(address: TransportWorld.phone, settings: [.lowEnergy, .powered], store: store,
                                       sockets: dead.sockets) { $0.connections = [TransportWorld.lock] }
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        #expect(dead.sockets.claims == 1, "no second ATT channel")
        #expect(world.transport.connectedLinks.map(\.role) == [.central])
    }

    /// Closing our socket no longer ends a link the store holds: ending it removes the
    /// store's copy and asks the kernel to disconnect (the unauthenticated-link timeout,
    /// the phone's command and setup timeouts and ATT's transaction timeout all end here).
    @Test func endingALinkRemovesItFromTheStoreAndDisconnects() throws {
        let store = SimulatedDescriptorStore()
        let (world, link, far) = try linkedLock(store)
        let names = store.held.map(\.name)
        link.disconnect()
        try world.settle()
        #expect(store.removed == names, "the socket and its state file")
        #expect(store.held.isEmpty)
        #expect(world.kernel.commands(.disconnect).map(\.parameters) == [bytes("02 00 00 ee ff c0 01")])
        #expect(receive(far) == [], "the phone's end sees the link end: nobody holds it any more")
    }

    @Test func aLinkThatEndsUnderUsIsRemovedFromTheStore() throws {
        let store = SimulatedDescriptorStore()
        let (world, _, far) = try linkedLock(store)
        let names = store.held.map(\.name)
        Glibc.close(far)
        try world.until { world.delegate.disconnects.count == 1 }
        #expect(store.removed == names)
        #expect(store.held.isEmpty)
    }

    @Test func aLinkNobodyClaimsIsRemovedFromTheStore() throws {
        let store = SimulatedDescriptorStore()
        let world = try TransportWorld(address: TransportWorld.lock, settings: [.lowEnergy, .powered], store: store)
        world.delegate.claimsLinks = false
        try world.settle()
        try world.transport.startAdvertising(Self.door)
        _ = try #require(world.sockets.listener).push(TransportWorld.phone)
        try world.until { world.delegate.links.count == 1 }
        #expect(store.held.isEmpty)
        #expect(store.removed.count == 2, "the socket and its state file")
    }

    /// A stop (not a crash): the links end now, rather than when systemd closes the store.
    @Test func closingEndsEachKeptLinkAndWaitsForTheKernel() throws {
        let store = SimulatedDescriptorStore()
        let (world, _, far) = try linkedLock(store)
        let start = world.kernel.received.count
        world.transport.close()
        #expect(store.held.isEmpty)
        #expect(world.kernel.received.dropFirst(start).map(\.code).sorted() == [MgmtOpcode.disconnect.rawValue, 0x003F])
        #expect(receive(far) == [])
    }

    /// A handed socket whose link ended while the agent was dead, and a name this transport
    /// never made: closed, removed from the store, reported; nothing adopted.
    @Test func whatCannotBeAdoptedIsClosedRemovedAndReported() throws {
        let store = SimulatedDescriptorStore()
        let (dead, link, _) = try linkedLock(store)
        kill(dead)
        let (stranger, _) = socketPair()
        try store.keep(stranger, name: "something-else")
        try store.restart()
        dead.sockets.endedLinks = Set(store.held.map { FakeLinkSockets.inode($0.fileDescriptor) })

        let world = try TransportWorld(address: TransportWorld.lock, settings: [.lowEnergy, .powered], store: store,
                                       sockets: dead.sockets)
        #expect(world.transport.connectedLinks.isEmpty)
        #expect(Set(store.removed) == ["att-\(link.id.rawValue)-peripheral", "state-\(link.id.rawValue)-peripheral",
                                       "something-else"])
        #expect(world.transport.adoptionFailures.count == 3)
    }

    /// A store that refuses: said once per link; the link still works (it just ends with us).
    @Test func aStoreThatRefusesIsReportedAndTheLinkStillWorks() throws {
        let store = SimulatedDescriptorStore()
        store.keepFailure = SystemError(.brokenPipe, call: "sendmsg")
        let (world, link, _) = try linkedLock(store)
        #expect(link.isConnected)
        #expect(world.failures.count == 1)
        #expect(world.failures.first?.message.contains("not kept") == true)
    }

    @Test func storeNamesRoundTripAndStrangeOnesAreRefused() {
        let name = LinkKeeper.storeName(of: LinkID(42), role: .central)
        #expect(name == "att-42-central")
        #expect(LinkKeeper.parseStoreName(name)?.0 == LinkID(42))
        #expect(LinkKeeper.parseStoreName(name)?.1 == .central)
        #expect(LinkKeeper.parseStoreName(name)?.isState == false)
        #expect(LinkKeeper.parseStoreName(LinkKeeper.stateName(of: LinkID(42), role: .central))?.isState == true)
        #expect(LinkKeeper.parseStoreName("att-x-central") == nil)
        #expect(LinkKeeper.parseStoreName("att-1-central-2") == nil)
        #expect(LinkKeeper.parseStoreName("stored") == nil)
    }
}
