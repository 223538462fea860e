import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `afterRequestsAnswered`: what a service manager is told is ready must be what the kernel
/// took, not what the transport asked for (systemd's READY=1, systemd/README.md).
@Suite struct KernelTransportAnswersTests {
    static let advertisement = Advertisement(data: AdvertisingData(localName: "Door"), interval: .milliseconds(100))

    /// The kernel's answers, held back until released.
    final class HeldAnswers {
        var packets: [MgmtPacket] = []
        func release(_ world: TransportWorld) {
            for packet in packets { for reply in world.model.answer(packet) { world.kernel.emit(reply) } }
            packets = []
        }
    }

    @Test func runsOnlyOnceTheKernelHasAnsweredEveryCommandSentBefore() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        let held = HeldAnswers()
        world.kernel.respond = { held.packets.append($0); return [] }
        try world.transport.startAdvertising(Self.advertisement)
        var ran = 0
        world.transport.afterRequestsAnswered { ran += 1 }
        // MgmtClient sends one command at a time: the interval first.
        try world.until { held.packets.map(\.code) == [MgmtOpcode.setDefaultSystemConfiguration.rawValue] }
        for _ in 0..<3 { try world.loop.runOnce(timeout: .milliseconds(5)) }
        #expect(ran == 0, "asked for, not yet taken")
        #expect(world.transport.isAdvertising, "the mirror says so at once; READY must not")

        held.release(world)
        try world.until { held.packets.map(\.code) == [MgmtOpcode.addAdvertising.rawValue] }
        for _ in 0..<3 { try world.loop.runOnce(timeout: .milliseconds(5)) }
        #expect(ran == 0, "the instance is still unanswered")

        held.release(world)
        try world.until { ran == 1 }
        // Nothing outstanding: the next turn.
        world.transport.afterRequestsAnswered { ran += 1 }
        #expect(ran == 1)
        try world.until { ran == 2 }
    }

    @Test func aRefusalHasCorrectedTheMirrorBeforeItRuns() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        world.model.refusals[MgmtOpcode.addAdvertising.rawValue] = 0x0D  // Invalid Parameters
        try world.transport.startAdvertising(Self.advertisement)
        var advertisingWhenAnswered: Bool?
        world.transport.afterRequestsAnswered { advertisingWhenAnswered = world.transport.isAdvertising }
        try world.until { advertisingWhenAnswered != nil }
        #expect(advertisingWhenAnswered == false)
        #expect(world.failures.count == 1)
    }

    @Test func aRefusedPendingConnectIsGoneBeforeItRuns() throws {
        let world = try TransportWorld()
        try world.settle()
        world.model.refusals[MgmtOpcode.addDevice.rawValue] = 0x0D
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        #expect(world.transport.pendingConnections == [TransportWorld.lock], "mirrored at once")
        var wantedWhenAnswered: Set<BluetoothAddress>?
        world.transport.afterRequestsAnswered { wantedWhenAnswered = world.transport.pendingConnections }
        try world.until { wantedWhenAnswered != nil }
        #expect(wantedWhenAnswered == [])
    }
}
