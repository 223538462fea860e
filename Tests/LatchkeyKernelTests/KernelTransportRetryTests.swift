import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// A wanted state is never dropped: the mocked kernel refuses a request N times,
/// then takes it; the transport asks again after each refusal, reports each one, and its
/// mirror says what the kernel holds all along.
@Suite struct KernelTransportRetryTests {
    static let busy: UInt8 = 0x0A
    static let noResources: UInt8 = 0x07
    static let failed: UInt8 = 0x03

    func world(address: BluetoothAddress = TransportWorld.phone) throws -> TransportWorld {
        let world = try TransportWorld(address: address)
        world.transport.retryBackoff = .init(first: .milliseconds(5), cap: .milliseconds(20))
        try world.settle()
        return world
    }

    @Test func theBackoffDoublesUpToItsCap() {
        let backoff = KernelTransport.RetryBackoff.standard
        #expect((1...8).map(backoff.delay(after:)) == [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30),
        ])
        #expect(backoff.delay(after: 1_000) == .seconds(30))
    }

    @Test func aPendingConnectRefusedThreeTimesIsAskedUntilItTakes() throws {
        let world = try world()
        world.model.repeatedRefusals[MgmtOpcode.addDevice.rawValue] = (Self.busy, 3)
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.until { world.delegate.refusals.count == 3 }
        try world.until { world.kernel.commands(.addDevice).count == 4 }
        try world.settle()
        #expect(world.transport.pendingConnections == [TransportWorld.lock])
        #expect(world.delegate.refusals.map(\.request) == Array(repeating: .pendingConnection(TransportWorld.lock), count: 3))
        #expect(world.delegate.refusals.map(\.attempt) == [1, 2, 3])
        #expect(world.delegate.refusals.map(\.retryIn) == [.milliseconds(5), .milliseconds(10), .milliseconds(20)])
        #expect(world.delegate.refusals.first?.reason.contains("Busy") == true)
        #expect(world.failures.count == 3)
        #expect(!world.transport.requests.isRetrying(.pendingConnection(TransportWorld.lock)), "taken: no retry left")
        // Taken: nothing more is sent.
        let sent = world.kernel.commands(.addDevice).count
        _ = try world.loop.run(until: { false }, timeout: .milliseconds(60))
        #expect(world.kernel.commands(.addDevice).count == sent)
    }

    @Test func theApplicationCancellingEndsTheRetries() throws {
        let world = try world()
        world.model.repeatedRefusals[MgmtOpcode.addDevice.rawValue] = (Self.noResources, 100)
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.until { world.delegate.refusals.count == 2 }
        world.transport.removePendingConnection(to: TransportWorld.lock)
        var ran = false
        world.transport.afterRequestsAnswered { ran = true }
        try world.until { ran }
        let sent = world.kernel.commands(.addDevice).count
        _ = try world.loop.run(until: { false }, timeout: .milliseconds(60))
        #expect(world.kernel.commands(.addDevice).count == sent, "not wanted any more: not asked again")
        #expect(world.kernel.received.last?.code == MgmtOpcode.removeDevice.rawValue)
    }

    @Test func refusedAdvertisingIsNotAdvertisingUntilItTakes() throws {
        let world = try world(address: TransportWorld.lock)
        world.model.repeatedRefusals[MgmtOpcode.addAdvertising.rawValue] = (Self.failed, 2)
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try world.until { world.delegate.refusals.count == 1 }
        #expect(!world.transport.isAdvertising)
        try world.until { world.transport.isAdvertising }
        #expect(world.delegate.refusals.map(\.request) == [.advertising, .advertising])
        #expect(world.kernel.commands(.addAdvertising).count == 3)
    }

    @Test func aRefusedAdvertisingIntervalIsARefusalOfTheAdvertising() throws {
        let world = try world(address: TransportWorld.lock)
        world.model.refusals[MgmtOpcode.setDefaultSystemConfiguration.rawValue] = Self.busy
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try world.until { world.delegate.refusals.count == 1 }
        #expect(world.delegate.refusals.first?.request == .advertising)
        try world.until { world.transport.isAdvertising }
        #expect(world.kernel.commands(.setDefaultSystemConfiguration).count == 2, "the interval went again")
    }

    @Test func refusedDiscoveryIsNotScanningUntilItTakes() throws {
        let world = try world()
        world.model.repeatedRefusals[MgmtOpcode.startDiscovery.rawValue] = (Self.busy, 2)
        try world.transport.startScanning(ScanParameters())
        try world.until { world.delegate.refusals.count == 1 }
        #expect(!world.transport.isScanning)
        try world.until { world.transport.isScanning }
        #expect(world.delegate.refusals.map(\.request) == [.scanning, .scanning])
        #expect(world.kernel.commands(.startDiscovery).count == 3)
        // Stopped while refused: not asked again.
        world.model.repeatedRefusals[MgmtOpcode.startDiscovery.rawValue] = (Self.busy, 100)
        world.transport.stopScanning()
        try world.transport.startScanning(ScanParameters())
        try world.until { world.delegate.refusals.count == 3 }
        world.transport.stopScanning()
        try world.settle()
        let sent = world.kernel.commands(.startDiscovery).count
        _ = try world.loop.run(until: { false }, timeout: .milliseconds(60))
        #expect(world.kernel.commands(.startDiscovery).count == sent)
    }

    @Test func refusedConnectionTimingIsAskedAgainAndRestartsTheScan() throws {
        let world = try world()
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        let addDevices = world.kernel.commands(.addDevice).count
        world.model.repeatedRefusals[MgmtOpcode.setDefaultSystemConfiguration.rawValue] = (Self.busy, 2)
        try world.transport.setConnectionParameters(.kernelDefault)
        try world.until { world.kernel.commands(.setDefaultSystemConfiguration).count == 3 }
        try world.settle()
        #expect(world.delegate.refusals.map(\.request) == [.connectionTiming, .connectionTiming])
        #expect(!world.transport.requests.isRetrying(.connectionTiming))
        // Each attempt is followed by Add Device for the unlinked entry: the scan restarts with the timing.
        #expect(world.kernel.commands(.addDevice).count == addDevices + 3)
    }

    @Test func aRefusedPowerOnIsAskedAgainUntilTheRadioIsOn() throws {
        let world = try TransportWorld(settings: [])
        world.transport.retryBackoff = .init(first: .milliseconds(5), cap: .milliseconds(20))
        world.model.repeatedRefusals[MgmtOpcode.setPowered.rawValue] = (Self.busy, 2)
        try world.until { world.transport.state == .poweredOn }
        #expect(world.delegate.refusals.map(\.request) == [.power, .power])
        #expect(world.kernel.commands(.setPowered).count == 3)
    }
}
