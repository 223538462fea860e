#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import LatchkeyTestKit
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// `LinkKeeper` on its own, without a transport: links kept in a simulated descriptor store
/// and adopted from it by the next keeper, as the next process would.
@Suite struct LinkKeeperTests {
    let loop = PosixEventLoop()
    let store = SimulatedDescriptorStore()

    /// Sockets whose peers are known by inode (the far ends stay open: the links are up).
    final class Sockets: LinkSocketProvider {
        var peers: [UInt64: BluetoothAddress] = [:]
        func listen(on local: BluetoothAddress) throws(KernelError) -> any LinkListener { fatalError("not used") }
        func claim(from local: BluetoothAddress, to peer: BluetoothAddress) throws(KernelError) -> (CInt, connected: Bool) {
            fatalError("not used")
        }
        func connectError(_ fd: CInt) -> Errno? { nil }
        func maximumTransmissionUnit(_ fd: CInt) -> Int { 185 }
        func peer(of fd: CInt) throws(KernelError) -> BluetoothAddress {
            guard let peer = peers[FakeLinkSockets.inode(fd)] else { throw KernelError(.system, "getpeername: not connected") }
            return peer
        }
    }

    func link(_ id: UInt64, _ fd: CInt) -> KernelLink {
        KernelLink(id: LinkID(id), fileDescriptor: fd, peer: TransportWorld.phone, role: .peripheral,
                   maximumTransmissionUnit: 185, loop: loop, transport: nil)
    }

    @Test func aKeptLinkIsInTheStoreWithItsStateUntilItIsForgotten() throws {
        let keeper = LinkKeeper(store: store)
        let (near, far) = socketPair()
        defer { Glibc.close(near); Glibc.close(far) }
        let kept = link(7, near)
        keeper.keep(kept, fileDescriptor: near)
        #expect(store.held.map(\.name) == ["att-7-peripheral", "state-7-peripheral"])
        keeper.forget(kept)
        #expect(store.held.isEmpty)
        #expect(store.removed == ["att-7-peripheral", "state-7-peripheral"])
    }

    @Test func aStoreThatRefusesIsReportedAndTheLinkEndsWithTheProcess() throws {
        let keeper = LinkKeeper(store: store)
        var failures: [KernelError] = []
        keeper.onFailure = { failures.append($0) }
        store.keepFailure = SystemError(.noSuchFileOrDirectory, call: "sendmsg")
        let (near, far) = socketPair()
        defer { Glibc.close(near); Glibc.close(far) }
        let kept = link(3, near)
        keeper.keep(kept, fileDescriptor: near)
        #expect(failures.count == 1 && failures[0].message.contains("it ends if this process dies"))
        #expect(kept.storeName == nil && store.held.isEmpty)
    }

    @Test func theNextKeeperAdoptsALiveLinkWithItsStateAndDiscardsTheRest() throws {
        let sockets = Sockets()
        let (near, far) = socketPair()
        defer { Glibc.close(far) }
        sockets.peers[FakeLinkSockets.inode(near)] = TransportWorld.phone
        let kept = link(42, near)
        kept.noteTiming(handle: 0x40, interval: .milliseconds(30))
        LinkKeeper(store: store).keep(kept, fileDescriptor: near)
        let (stray, strayFar) = socketPair()
        defer { Glibc.close(stray); Glibc.close(strayFar) }
        try store.keep(stray, name: "something-else")
        kept.drop()  // the process dies: its copies close, the store's stay
        try store.restart()

        let next = LinkKeeper(store: store)
        let (adopted, highest) = next.adopt(now: Instant(nanoseconds: 0), sockets: sockets) { id, fd, peer, role in
            KernelLink(id: id, fileDescriptor: fd, peer: peer, role: role, maximumTransmissionUnit: 185, loop: loop,
                       transport: nil)
        }
        #expect(adopted.map(\.id) == [LinkID(42)])
        #expect(adopted.first?.connectionInterval == .milliseconds(30), "from the state kept beside it")
        #expect(highest == 42)
        #expect(next.adoptionFailures.count == 1)
        #expect(next.adoptionFailures.first?.message.contains("something-else") == true)
        #expect(store.removed.contains("something-else"))
        for link in adopted { link.drop() }
    }

    @Test func withoutAStoreNothingIsKeptOrAdopted() {
        let keeper = LinkKeeper(store: nil)
        #expect(!keeper.isKeeping)
        let (near, far) = socketPair()
        defer { Glibc.close(near); Glibc.close(far) }
        keeper.keep(link(1, near), fileDescriptor: near)
        #expect(keeper.adopt(now: Instant(nanoseconds: 0), sockets: Sockets()) { _, _, _, _ in fatalError() }.links.isEmpty)
        #expect(keeper.adoptionFailures.isEmpty)
    }
}
