#if canImport(Glibc)
import Glibc
#endif
import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeyPosix
import LatchkeyTestKit
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// The peripheral manager on the kernel transport across the lock application's death,
/// its link kept in the descriptor store: `willRestoreState` names the adopted link with
/// the MTU and the subscription it had (HIL 72 shows the same on the real kernel).
@Suite struct KernelTransportRestorationTests {
    static let service = GATTService(uuid: BluetoothUUID(0xFFF0), characteristics: [
        GATTCharacteristic(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], permissions: .read, value: [0]),
    ])
    let links = KernelTransportDescriptorStoreTests()

    final class App: PeripheralManagerDelegate {
        var restored: RestoredPeripheralState?
        func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) {}
        func peripheralManager(_ peripheral: PeripheralManager, willRestoreState state: RestoredPeripheralState) {
            restored = state
        }
    }

    /// The phone's end: sends `pdu` and waits for the lock's answer.
    func exchange(_ world: TransportWorld, _ far: CInt, _ pdu: [UInt8]) throws -> [UInt8] {
        links.send(far, pdu)
        var answer: [UInt8]?
        try world.until {
            answer = links.receive(far)
            return answer != nil
        }
        return answer ?? []
    }

    @Test func willRestoreStateNamesTheAdoptedLinkWithItsMTUAndSubscriptions() throws {
        let store = SimulatedDescriptorStore()
        let storage = InMemoryRestorationStorage()
        let options = ManagerOptions(restoreIdentifier: "lock", restorationStorage: storage)
        let dead = try TransportWorld(address: TransportWorld.lock, settings: [.lowEnergy, .powered], store: store)
        try dead.settle()
        var first: PeripheralManager? = PeripheralManager(transport: dead.transport, delegate: App(), options: options)
        let service = try #require(first).add(Self.service)
        first?.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try dead.settle()
        let far = try #require(dead.sockets.listener).push(TransportWorld.phone)
        try dead.until { first?.centrals.count == 1 }
        let linkID = try #require(first?.centrals.first).linkID
        #expect(try exchange(dead, far, [0x02, 0xB9, 0x00]) == [0x03, 0xB9, 0x00], "MTU 185")
        let cccd = try #require(service.handles.clientConfigurations[0])
        #expect(try exchange(dead, far, [0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), 0x01, 0x00]) == [0x13])
        #expect(service.characteristics[0].subscribedCentrals.count == 1)

        // SIGKILL: our sockets close, the manager is gone; the store keeps the link.
        links.kill(dead)
        first = nil
        try store.restart()
        let world = try TransportWorld(address: TransportWorld.lock, settings: [.lowEnergy, .powered], store: store,
                                       sockets: dead.sockets) { $0.connections = [TransportWorld.phone] }
        let app = App()
        let relaunched = PeripheralManager(transport: world.transport, delegate: app, options: options)
        try world.until { app.restored != nil }
        let state = try #require(app.restored)
        #expect(state.centrals.map(\.linkID) == [linkID], "the adopted link, under its old id")
        #expect(state.centrals.first?.maximumUpdateValueLength == 182, "the MTU it had (185), not ATT's 23")
        let restored = try #require(state.services.first?.characteristics.first)
        #expect(restored.subscribedCentrals.map(\.linkID) == [linkID], "still subscribed: no CCCD write needed")
        #expect(world.kernel.commands(.disconnect).isEmpty)
        // The link works for the relaunched manager: a notification reaches the phone.
        #expect(relaunched.updateValue([0x2A], for: restored))
        var notified: [UInt8]?
        try world.until {
            notified = links.receive(far)
            return notified != nil
        }
        #expect(notified == [0x1B, UInt8(restored.valueHandle & 0xFF), UInt8(restored.valueHandle >> 8), 0x2A])
        #expect(world.failures.isEmpty && world.transport.adoptionFailures.isEmpty)
    }
}
