#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import LatchkeyTestKit
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// What is kept of a link beside its socket in the descriptor store (a sealed memfd,
/// `KeptLinkState`): its connection interval and the application's state (the lock's
/// session) come back with the adopted link; a file that is not a whole record of that
/// link is not trusted, and that is said.
@Suite struct KernelTransportKeptLinkStateTests {
    static let door = Advertisement(data: AdvertisingData(localName: "Door"))
    let links = KernelTransportDescriptorStoreTests()

    /// A lock with a phone linked at a 50 ms interval (handle 0x40), the link kept in `store`.
    func linkedLock(_ store: SimulatedDescriptorStore) throws -> (TransportWorld, any ATTLink) {
        let (world, link, _) = try links.linkedLock(store)
        world.hciEvents.emit(KernelTransportConnectionTimingTests.complete(units: 40))
        try world.until { link.connectionInterval == .milliseconds(50) }
        return (world, link)
    }

    /// The lock dies and starts again on what the store kept.
    func restart(_ dead: TransportWorld, _ store: SimulatedDescriptorStore) throws -> TransportWorld {
        links.kill(dead)
        try store.restart()
        let world = try TransportWorld(address: TransportWorld.lock, settings: [.lowEnergy, .powered], store: store,
                                       sockets: dead.sockets) { $0.connections = [TransportWorld.phone] }
        try world.transport.startAdvertising(Self.door)
        try world.settle()
        return world
    }

    func heldFile(_ store: SimulatedDescriptorStore, _ name: String) throws -> CInt {
        try #require(store.held.first { $0.name == name }).fileDescriptor
    }

    /// Without the state file, the adopted link's interval is unknown (the arrival rule then
    /// refuses, and logs a suspected relay) and the lock's session is gone.
    @Test func theIntervalAndTheApplicationsStateComeBackWithTheAdoptedLink() throws {
        let store = SimulatedDescriptorStore()
        let (dead, link) = try linkedLock(store)
        #expect(try link.keep(applicationState: [1, 2, 3]))
        #expect(store.held.map(\.name) == ["att-\(link.id.rawValue)-peripheral", "state-\(link.id.rawValue)-peripheral"])
        #expect(dead.failures.isEmpty)

        let world = try restart(dead, store)
        let adopted = try #require(world.transport.connectedLinks.first)
        #expect(adopted.id == link.id)
        #expect(adopted.connectionInterval == .milliseconds(50))
        #expect(adopted.keptApplicationState == [1, 2, 3])
        #expect(world.transport.adoptionFailures.isEmpty)
        // The handle came back too: the controller's next update names only it.
        world.hciEvents.emit(KernelTransportConnectionTimingTests.update(units: 80))
        try world.until { adopted.connectionInterval == .milliseconds(100) }
        // Kept again by the new process, and across its own death.
        #expect(try adopted.keep(applicationState: [4]))
        let third = try restart(world, store)
        let again = try #require(third.transport.connectedLinks.first)
        #expect(again.connectionInterval == .milliseconds(100) && again.keptApplicationState == [4])
    }

    @Test func aLinkThatEndsWithTheProcessKeepsNothingAndALinkKeptKeepsAtMostItsCapacity() throws {
        let plain = try TransportWorld(address: TransportWorld.lock, settings: [.lowEnergy, .powered])
        try plain.settle()
        try plain.transport.startAdvertising(Self.door)
        _ = try #require(plain.sockets.listener).push(TransportWorld.phone)
        try plain.until { plain.delegate.links.count == 1 }
        #expect(try plain.delegate.links[0].keep(applicationState: [1]) == false, "no store: nothing outlives the process")

        let (world, link, _) = try links.linkedLock(SimulatedDescriptorStore())
        #expect(try link.keep(applicationState: [UInt8](repeating: 0, count: KeptLinkState.maximumApplicationLength)))
        #expect(throws: TransportError.self) {
            try link.keep(applicationState: [UInt8](repeating: 0, count: KeptLinkState.maximumApplicationLength + 1))
        }
        withExtendedLifetime(world) {}
    }

    /// A damaged record, a record of another link, and a file that is no sealed memfd of
    /// ours: none is trusted; each is reported; the link is adopted without it (a stranger's
    /// link stays a stranger's) and gets a fresh state file.
    @Test(arguments: ["damaged", "other link", "foreign file"])
    func aStateFileThatCannotBeTrustedIsIgnoredAndReported(_ fault: String) throws {
        let store = SimulatedDescriptorStore()
        let (dead, link) = try linkedLock(store)
        #expect(try link.keep(applicationState: [1, 2, 3]))
        let name = "state-\(link.id.rawValue)-peripheral"
        let fd = try heldFile(store, name)
        switch fault {
        case "damaged":
            _ = [UInt8](repeating: 0xEE, count: 2).withUnsafeBytes { pwrite(fd, $0.baseAddress, 2, 30) }
        case "other link":
            let other = KeptLinkState(id: LinkID(link.id.rawValue + 1), peer: TransportWorld.phone, role: .peripheral,
                                      application: [9, 9]).encoded()
            _ = other.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        default:
            try store.remove(name: name)
            let (foreign, _) = socketPair()
            try store.keep(foreign, name: name)
        }

        let world = try restart(dead, store)
        let adopted = try #require(world.transport.connectedLinks.first)
        #expect(adopted.id == link.id, "the link itself is adopted")
        #expect(adopted.keptApplicationState == nil)
        #expect(adopted.connectionInterval == nil)
        #expect(world.transport.adoptionFailures.count == 1)
        #expect(world.transport.adoptionFailures.first?.message.contains(name) == true)
        // A fresh, whole record of this link is kept for the next process.
        #expect(try adopted.keep(applicationState: [7]))
        let third = try restart(world, store)
        #expect(third.transport.connectedLinks.first?.keptApplicationState == [7])
        #expect(third.transport.adoptionFailures.isEmpty)
    }

    @Test func endingALinkRemovesItsStateFileToo() throws {
        let store = SimulatedDescriptorStore()
        let (world, link) = try linkedLock(store)
        link.disconnect()
        try world.settle()
        #expect(store.removed == ["att-\(link.id.rawValue)-peripheral", "state-\(link.id.rawValue)-peripheral"])
        #expect(store.held.isEmpty)
    }

    @Test func recordsRoundTripAndRefuseWhatIsNotOne() throws {
        let state = KeptLinkState(id: LinkID(7), peer: TransportWorld.phone, role: .central, connectionHandle: 0x41,
                                  connectionInterval: .microseconds(48_750), application: [1, 2])
        var file = state.encoded() + [UInt8](repeating: 0, count: 40)
        #expect(try KeptLinkState.read(file, for: LinkID(7), peer: TransportWorld.phone, role: .central) == state)
        #expect(throws: KeptLinkState.Refusal.otherLink(LinkID(7), TransportWorld.phone)) {
            try KeptLinkState.read(file, for: LinkID(7), peer: TransportWorld.phone, role: .peripheral)
        }
        #expect(throws: KeptLinkState.Refusal.neverWritten) { try KeptLinkState(decoding: [UInt8](repeating: 0, count: 64)) }
        #expect(throws: KeptLinkState.Refusal.notARecord) { try KeptLinkState(decoding: Array("hello, world".utf8)) }
        file[9] ^= 1
        #expect(throws: KeptLinkState.Refusal.damaged) { try KeptLinkState(decoding: file) }
    }
}
