import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
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

    /// A refused request is not answered yet: it waits for its retry, and READY with it.
    @Test func aRefusedAdvertisingRunsItOnlyOnceTheRetryTook() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        world.transport.retryBackoff = .init(first: .milliseconds(10), cap: .milliseconds(20))
        try world.settle()
        world.model.repeatedRefusals[MgmtOpcode.addAdvertising.rawValue] = (0x0A, 2)  // Busy, twice
        try world.transport.startAdvertising(Self.advertisement)
        var advertisingWhenAnswered: Bool?
        world.transport.afterRequestsAnswered { advertisingWhenAnswered = world.transport.isAdvertising }
        try world.until { world.failures.count == 1 }
        #expect(!world.transport.isAdvertising, "refused: the kernel does not hold it")
        for _ in 0..<3 { try world.loop.runOnce(timeout: .milliseconds(1)) }
        #expect(advertisingWhenAnswered == nil, "not taken yet")
        try world.until { advertisingWhenAnswered != nil }
        #expect(advertisingWhenAnswered == true)
        #expect(world.failures.count == 2)
        #expect(world.kernel.commands(.addAdvertising).count == 3)
    }

    /// Was: a refused Add Device dropped the entry (and nothing asked again until a power
    /// cycle). Now the entry stays wanted, is asked again, and READY follows the retry.
    @Test func aRefusedPendingConnectStaysWantedAndRunsItOnceTaken() throws {
        let world = try TransportWorld()
        world.transport.retryBackoff = .init(first: .milliseconds(10), cap: .milliseconds(20))
        try world.settle()
        world.model.repeatedRefusals[MgmtOpcode.addDevice.rawValue] = (0x0D, 2)
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        #expect(world.transport.pendingConnections == [TransportWorld.lock], "mirrored at once")
        var wantedWhenAnswered: Set<BluetoothAddress>?
        world.transport.afterRequestsAnswered { wantedWhenAnswered = world.transport.pendingConnections }
        try world.until { wantedWhenAnswered != nil }
        #expect(wantedWhenAnswered == [TransportWorld.lock])
        #expect(world.kernel.commands(.addDevice).count == 3)
        #expect(world.failures.count == 2)
    }
}
