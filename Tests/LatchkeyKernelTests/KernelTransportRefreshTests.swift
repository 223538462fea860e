import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// What the transport sends again and what it must not: the causes of the HIL suite's
/// intermittent c and g after the lifecycle fixes (docs/LINUX-BLE.md, "What the HIL suite found").
@Suite struct KernelTransportRefreshTests {
    static let addLock = bytes("33 00 00 00 08 00 01 00 00 ee ff c0 01 02")

    /// Turns the loop for `duration` (the interval timers are real-time on PosixEventLoop).
    func idle(_ world: TransportWorld, _ duration: Duration) throws {
        _ = try world.loop.run(until: { false }, timeout: duration)
    }

    /// The kernel can stop scanning for an entry after a failed connection attempt and say
    /// nothing: where the HCI events cannot be watched (no CAP_NET_RAW), an entry with no
    /// link is sent again each interval, and only then.
    @Test func withoutTheEventWatchAnEntryWithNoLinkIsSentAgainEachInterval() throws {
        let world = try TransportWorld(hciEventWatch: false)
        world.transport.pendingRefreshInterval = .milliseconds(40)
        try world.settle()
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.until { world.kernel.commands(.addDevice).count == 3 }
        #expect(world.kernel.commands(.addDevice).allSatisfy { $0.encoded() == Self.addLock })
        #expect(world.transport.pendingConnections == [TransportWorld.lock])

        // Linked: the kernel is not scanning for it, nothing is sent.
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        try world.until { world.transport.connectedDevices.sorted == [TransportWorld.lock] }
        let linked = world.kernel.commands(.addDevice).count
        try idle(world, .milliseconds(150))
        #expect(world.kernel.commands(.addDevice).count == linked)

        // Link lost: the first re-send comes a whole interval later, then one per interval.
        world.kernel.emit(FakeKernel.deviceDisconnected(TransportWorld.hci0, TransportWorld.lock, reason: 3))
        try world.until { world.transport.connectedDevices.sorted.isEmpty }
        #expect(world.kernel.commands(.addDevice).count == linked, "not in the middle of the kernel's own reaction")
        try world.until { world.kernel.commands(.addDevice).count == linked + 2 }

        // No longer wanted: Remove Device, and nothing after it.
        world.transport.removePendingConnection(to: TransportWorld.lock)
        try world.settle()
        let removed = world.kernel.received.count
        try idle(world, .milliseconds(150))
        #expect(world.kernel.received.count == removed)
        #expect(world.kernel.received.last?.code == MgmtOpcode.removeDevice.rawValue)
    }

    @Test func nothingIsSentAgainWhilePoweredOff() throws {
        let world = try TransportWorld(hciEventWatch: false)
        world.transport.pendingRefreshInterval = .milliseconds(40)
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        world.kernel.emit(FakeKernel.newSettings(TransportWorld.hci0, [.lowEnergy, .connectable]))
        try world.until { world.transport.state == .poweredOff }
        let off = world.kernel.commands(.addDevice).count
        try idle(world, .milliseconds(150))
        #expect(world.kernel.commands(.addDevice).count == off)
        world.kernel.emit(FakeKernel.newSettings(TransportWorld.hci0, [.lowEnergy, .connectable, .powered]))
        try world.until { world.kernel.commands(.addDevice).count == off + 2 }  // power-on, then the interval
    }

    /// A refused re-send is reported; the entry is still wanted (the kernel has it).
    @Test func aRefusedResendKeepsTheEntry() throws {
        let world = try TransportWorld(hciEventWatch: false)
        world.transport.pendingRefreshInterval = .milliseconds(40)
        try world.settle()
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        world.model.refusals[MgmtOpcode.addDevice.rawValue] = 0x0A  // Busy
        try world.until { world.failures.contains { $0.code == .management } }
        #expect(world.transport.pendingConnections == [TransportWorld.lock])
        try world.until { world.kernel.commands(.addDevice).count == 3 }
    }

    /// The kernel keeps new scan defaults for its next passive scan: the entries with no link
    /// are sent after them so the scan restarts with them now (an execution mode switch).
    @Test func newScanTimingRestartsTheScanForEntriesWithNoLink() throws {
        let world = try TransportWorld()
        try world.settle()
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        var background = ConnectionParameters.kernelDefault
        background.scanInterval = .milliseconds(1_280)
        background.scanWindow = .microseconds(11_250)
        var start = world.kernel.received.count
        try world.transport.setConnectionParameters(background)
        try world.settle()
        #expect(world.opcodes(since: start) == [0x004C, 0x0033])
        #expect(world.kernel.received.dropFirst(start).first?.parameters.prefix(10) == [0x0d, 0x00, 0x02, 0x00, 0x08,
                                                                                       0x0e, 0x00, 0x02, 0x12, 0x00],
                "1.28 s / 11.25 ms in 0.625 ms units")

        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        try world.until { world.transport.connectedDevices.sorted == [TransportWorld.lock] }
        start = world.kernel.received.count
        try world.transport.setConnectionParameters(.kernelDefault)
        try world.settle()
        #expect(world.opcodes(since: start) == [0x004C], "linked: nothing scans for it")
    }

    /// Re-adding an instance pauses advertising; a phone connecting in the pause fails and
    /// (6.12) stops scanning. The same advertising asked again, as the lock agent does on
    /// every power-on right after the transport re-asserted it, sends nothing.
    @Test func theSameAdvertisingAskedAgainSendsNothing() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        let ad = Advertisement(data: AdvertisingData(localName: "Door"), interval: .milliseconds(20))
        try world.transport.startAdvertising(ad)
        try world.settle()
        var start = world.kernel.received.count
        try world.transport.startAdvertising(ad)
        try world.settle()
        #expect(world.opcodes(since: start) == [])

        var slower = ad
        slower.interval = .microseconds(152_500)
        try world.transport.startAdvertising(slower)
        try world.settle()
        #expect(world.opcodes(since: start) == [0x004C, 0x003E], "a change is sent")

        world.kernel.emit(FakeKernel.newSettings(TransportWorld.hci0, [.lowEnergy, .connectable]))
        try world.until { world.transport.state == .poweredOff }
        start = world.kernel.received.count
        world.kernel.emit(FakeKernel.newSettings(TransportWorld.hci0, [.lowEnergy, .connectable, .powered]))
        try world.until { world.transport.state == .poweredOn }
        try world.transport.startAdvertising(slower)
        try world.settle()
        #expect(world.opcodes(since: start) == [0x004C, 0x003E, 0x0015], "re-asserted once, not again for the agent")
    }
}
