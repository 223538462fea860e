import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// The re-send of the pending connections after a failed connection attempt, driven by the
/// controller's HCI events instead of a timer (no periodic wake-ups while idle).
@Suite struct KernelTransportConnectFailureTests {
    static let addLock = KernelTransportRefreshTests.addLock

    func idle(_ world: TransportWorld, _ duration: Duration) throws {
        _ = try world.loop.run(until: { false }, timeout: duration)
    }

    /// A phone waiting for its lock, the watch open, the first Add Device answered.
    func waitingPhone() throws -> TransportWorld {
        let world = try TransportWorld()
        try world.settle()
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        #expect(world.hciEvents.opened == [TransportWorld.hci0])
        #expect(world.transport.pendingRescan.watchIndex != nil)
        return world
    }

    /// 6.12: LE Connection Complete 0x3E, then the kernel's cancel refused (0x0C). The Add
    /// Device goes out on the refused cancel, at once, not after a settle delay or interval.
    @Test func aRefusedCancelResendsThePendingConnectionAtOnce() throws {
        let world = try waitingPhone()
        world.transport.pendingRescan.settleDelay = .seconds(30)
        let before = world.kernel.commands(.addDevice).count
        world.hciEvents.emit(FakeHCIEvents.connectionComplete(status: 0x3E))
        world.hciEvents.emit(FakeHCIEvents.cancelComplete(status: 0x0C))
        try world.until { world.kernel.commands(.addDevice).count == before + 1 }
        #expect(world.kernel.commands(.addDevice).last?.encoded() == Self.addLock)
        #expect(!world.transport.pendingRescan.resendIsWaiting, "the refused cancel replaced the delayed re-send")
        try idle(world, .milliseconds(100))
        #expect(world.kernel.commands(.addDevice).count == before + 1, "once per failure")
    }

    /// A failed complete with no cancel after it (a kernel that cleans up at once): the
    /// re-send waits out the settle delay.
    @Test func aFailedConnectionCompleteAloneResendsAfterTheSettleDelay() throws {
        let world = try waitingPhone()
        world.transport.pendingRescan.settleDelay = .milliseconds(60)
        let before = world.kernel.commands(.addDevice).count
        world.hciEvents.emit(FakeHCIEvents.connectionComplete(status: 0x3E, subevent: 0x0A))  // Enhanced
        try world.until { world.transport.pendingRescan.resendIsWaiting }
        #expect(world.kernel.commands(.addDevice).count == before, "not while the kernel may still cancel")
        try world.until { world.kernel.commands(.addDevice).count == before + 1 }
        #expect(world.kernel.commands(.addDevice).last?.encoded() == Self.addLock)
    }

    /// Only failures re-send: a link made, a cancel that succeeded, advertising reports.
    @Test func otherEventsSendNothing() throws {
        let world = try waitingPhone()
        world.transport.pendingRescan.settleDelay = .milliseconds(20)
        let before = world.kernel.received.count
        world.hciEvents.emit(FakeHCIEvents.advertisingReport)
        world.hciEvents.emit(FakeHCIEvents.connectionComplete(status: 0))
        world.hciEvents.emit(FakeHCIEvents.cancelComplete(status: 0))
        try world.until { world.transport.pendingRescan.eventsReceived == 3 }
        try idle(world, .milliseconds(100))
        #expect(world.kernel.received.count == before)
    }

    /// A linked entry is not re-sent (the kernel is not scanning for it); with nothing
    /// wanted the watch is not even opened.
    @Test func linkedOrUnwantedEntriesAreNotResent() throws {
        let world = try waitingPhone()
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        try world.until { world.transport.connectedDevices.sorted == [TransportWorld.lock] }
        let before = world.kernel.received.count
        world.hciEvents.emit(FakeHCIEvents.connectionComplete(status: 0x3E))
        world.hciEvents.emit(FakeHCIEvents.cancelComplete(status: 0x0C))
        try world.until { world.transport.pendingRescan.eventsReceived == 2 }
        try idle(world, .milliseconds(50))
        #expect(world.kernel.received.count == before)

        world.transport.removePendingConnection(to: TransportWorld.lock)
        try world.settle()
        let removed = world.kernel.received.count
        world.hciEvents.emit(FakeHCIEvents.cancelComplete(status: 0x0C))
        try world.until { world.transport.pendingRescan.eventsReceived == 3 }
        try idle(world, .milliseconds(50))
        #expect(world.kernel.received.count == removed)

        let lock = try TransportWorld(address: TransportWorld.lock)
        try lock.settle()
        #expect(lock.hciEvents.opened.isEmpty, "nothing wanted: no raw HCI socket")
    }

    /// With the watch open nothing is scheduled: an away lock costs no wake-up at all.
    @Test func noTimerRunsWhileTheWatchIsOpen() throws {
        let world = try waitingPhone()
        world.transport.pendingRefreshInterval = .milliseconds(40)
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        world.kernel.emit(FakeKernel.deviceDisconnected(TransportWorld.hci0, TransportWorld.lock, reason: 8))
        try world.until { world.kernel.received.count > 0 && world.transport.connectedDevices.sorted.isEmpty }
        try world.settle()
        #expect(!world.transport.pendingRescan.isTimerRunning)
        let before = world.kernel.received.count
        try idle(world, .milliseconds(200))
        #expect(world.kernel.received.count == before, "no re-send without a failure")
    }

    /// Without CAP_NET_RAW the watch cannot be opened: the 5 s timer takes over, and why is
    /// said once, not on every change.
    @Test func theTimerTakesOverWhenTheWatchCannotOpen() throws {
        let world = try TransportWorld(hciEventWatch: false)
        world.transport.pendingRefreshInterval = .milliseconds(40)
        try world.settle()
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        #expect(world.transport.pendingRescan.isTimerRunning)
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        world.kernel.emit(FakeKernel.deviceDisconnected(TransportWorld.hci0, TransportWorld.lock, reason: 8))
        try world.until { world.kernel.commands(.addDevice).count >= 3 }
        #expect(world.hciEvents.opened == [TransportWorld.hci0], "tried once")
        #expect(world.failures.count == 1)
        #expect(world.failures.first?.code == .permissionDenied)
        #expect(world.failures.first?.message.contains("CAP_NET_RAW") == true)
        #expect(world.failures.first?.message.contains("re-sending pending connections every") == true)
    }

    /// The controller going away closes the watch; coming back (a new index) opens one there.
    @Test func theWatchFollowsTheControllersIndex() throws {
        let world = try waitingPhone()
        let first = world.hciEvents.source
        world.kernel.emit(bytes("05 00 00 00 00 00"))  // Index Removed
        try world.until { world.transport.pendingRescan.watchIndex == nil }
        #expect(first?.isClosed == true)
        let hci1 = MgmtIndex(1)
        let info = ControllerInfo(address: TransportWorld.phone, supportedSettings: [], currentSettings: [.lowEnergy])
        world.kernel.respond = { [model = world.model] packet in
            packet.code == 0x0004 ? [FakeKernel.complete(0x0004, packet.index, info.encoded())] : model.answer(packet)
        }
        world.kernel.emit(bytes("04 00 01 00 00 00"))  // Index Added
        try world.until { world.transport.pendingRescan.watchIndex == hci1 }
        #expect(world.hciEvents.opened == [TransportWorld.hci0, hci1])
    }

    /// The packets as a raw HCI socket delivers them: only errors of the connection
    /// completes and of the cancel mean anything; short or foreign packets mean nothing.
    @Test func connectAttemptEventsAreReadFromThePackets() {
        #expect(ConnectAttemptEvent(packet: FakeHCIEvents.connectionComplete(status: 0x3E)) == .failed(status: 0x3E))
        #expect(ConnectAttemptEvent(packet: FakeHCIEvents.connectionComplete(status: 0x3E, subevent: 0x29)) == .failed(status: 0x3E))
        #expect(ConnectAttemptEvent(packet: FakeHCIEvents.connectionComplete(status: 0)) == nil)
        #expect(ConnectAttemptEvent(packet: FakeHCIEvents.cancelComplete(status: 0x0C)) == .cancelRefused(status: 0x0C))
        #expect(ConnectAttemptEvent(packet: FakeHCIEvents.cancelComplete(status: 0)) == nil)
        // Command Status: Status, Num_HCI_Command_Packets, Opcode.
        #expect(ConnectAttemptEvent(packet: [0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0E, 0x20]) == .cancelRefused(status: 0x0C))
        #expect(ConnectAttemptEvent(packet: [0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0D, 0x20]) == nil, "another command")
        #expect(ConnectAttemptEvent(packet: [0x04, 0x0E, 0x04, 0x01, 0x0D, 0x20, 0x0C]) == nil, "another command")
        #expect(ConnectAttemptEvent(packet: FakeHCIEvents.advertisingReport) == nil)
        #expect(ConnectAttemptEvent(packet: [0x04, 0x3E, 0x01, 0x01]) == nil, "too short")
        #expect(ConnectAttemptEvent(packet: [0x04, 0x0E, 0x09, 0x01, 0x0E, 0x20, 0x0C]) == nil, "length does not match")
        #expect(ConnectAttemptEvent(packet: [0x02, 0x0E, 0x04, 0x01, 0x0E, 0x20, 0x0C]) == nil, "not an event packet")
    }
}
