import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `KernelLinkRegistry` on its own, with links that hold no socket.
@Suite struct KernelLinkRegistryTests {
    final class Link: RegisteredLink {
        let id: LinkID
        let peer: BluetoothAddress
        let role: LinkRole
        var isConnected = true
        var connectionHandle: UInt16?
        var interval: Duration?

        init(_ id: LinkID, _ peer: BluetoothAddress, _ role: LinkRole) {
            self.id = id; self.peer = peer; self.role = role
        }

        func noteTiming(handle: UInt16?, interval: Duration?) {
            connectionHandle = handle
            self.interval = interval
        }
    }

    static let phone = BluetoothAddress(0x11_22_33_44_55_66)
    static let stranger = BluetoothAddress(0x66_55_44_33_22_11)
    let registry = KernelLinkRegistry<Link>()

    @Test func newLinksGetIdsAboveEveryAdoptedOne() {
        let kept = Link(LinkID(41), Self.phone, .peripheral)
        registry.adopt([kept], highestID: 1_000)
        #expect(registry.adopted == [LinkID(41)])
        #expect(registry.all.map(\.id) == [LinkID(41)])
        #expect(registry.nextID() == LinkID(1_001))
        #expect(registry.nextID() == LinkID(1_002), "never reused")
    }

    @Test func aLinkIsFoundByPeerAndRoleUntilRemoved() {
        let link = Link(registry.nextID(), Self.phone, .peripheral)
        #expect(!registry.holds(Self.phone) && !registry.hasPeripheralLink)
        registry.add(link)
        #expect(registry.holds(Self.phone) && !registry.holds(Self.stranger))
        #expect(registry.hasPeripheralLink)
        #expect(registry.remove(link))
        #expect(!registry.remove(link), "removed once")
        #expect(!registry.holds(Self.phone) && !registry.hasPeripheralLink)
    }

    @Test func onlyConnectedLinksAreShownToTheManagers() {
        let ending = Link(registry.nextID(), Self.phone, .central)
        let up = Link(registry.nextID(), Self.stranger, .central)
        registry.add(ending)
        registry.add(up)
        ending.isConnected = false
        #expect(registry.connected.map(\.id) == [up.id])
        #expect(registry.all.count == 2, "still held until its end is handled")
    }

    @Test func timingGoesToTheLinksOfItsPeerAndTheHandleNamesThePeer() {
        let phone = Link(registry.nextID(), Self.phone, .peripheral)
        let stranger = Link(registry.nextID(), Self.stranger, .peripheral)
        registry.add(phone)
        registry.add(stranger)
        registry.noteTiming(peer: Self.phone.value, handle: 0x40, interval: .microseconds(30_000))
        #expect(phone.connectionHandle == 0x40 && phone.interval == .microseconds(30_000))
        #expect(stranger.connectionHandle == nil && stranger.interval == nil)
        #expect(registry.peer(ofHandle: 0x40) == Self.phone.value)
        #expect(registry.peer(ofHandle: 0x41) == nil)
    }

    @Test func closingHandsBackEveryLinkAndLeavesNone() {
        registry.add(Link(registry.nextID(), Self.phone, .peripheral))
        registry.add(Link(registry.nextID(), Self.stranger, .central))
        #expect(registry.removeAll().count == 2)
        #expect(registry.all.isEmpty && !registry.holds(Self.phone))
    }
}
