#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// The controller side of the kernel transport on a scripted kernel.
@Suite struct KernelTransportTests {
    @Test func openingPowersTheControllerOnWithLowEnergy() throws {
        let world = try TransportWorld()
        #expect(world.transport.address == TransportWorld.phone)
        #expect(world.transport.state == .poweredOff, "Read Controller Information said: off")
        try world.settle()
        // Read Index List, Read Info, a stale instance removed, then LE, not bondable,
        // connectable, powered; then (powered on) what is to re-assert: here only Get Connections.
        #expect(world.kernel.received.map { $0.encoded() } == [
            bytes("03 00 ff ff 00 00"), bytes("04 00 00 00 00 00"), bytes("3f 00 00 00 01 00 01"),
            bytes("0d 00 00 00 01 00 01"), bytes("09 00 00 00 01 00 00"), bytes("07 00 00 00 01 00 01"),
            bytes("05 00 00 00 01 00 01"), bytes("15 00 00 00 00 00"),
        ])
        #expect(world.transport.state == .poweredOn)
        #expect(world.delegate.states == [.poweredOn])
        #expect(world.failures.isEmpty)
    }

    @Test func aMissingAdapterListsTheOnesPresent() throws {
        let loop = PosixEventLoop()
        let kernel = FakeKernel(loop: loop)
        kernel.expect(bytes("03 00 ff ff 00 00"), reply: FakeKernel.complete(0x0003, .none, [2, 0, 1, 0, 3, 0]))
        let mgmt = MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop)
        let error = #expect(throws: KernelError.self) {
            _ = try KernelTransport.open(adapter: "hci0", mgmt: mgmt, sockets: FakeLinkSockets(), hciEvents: FakeHCIEvents())
        }
        #expect(error?.code == .adapterNotFound)
        #expect(error?.message == "no Bluetooth adapter hci0; adapters present: hci1, hci3")
        #expect(!mgmt.isOpen, "a failed open closes the mgmt socket")
    }

    @Test func anAdapterCanBeNamedByItsAddress() throws {
        let loop = PosixEventLoop()
        let kernel = FakeKernel(loop: loop)
        let other = ControllerInfo(address: TransportWorld.phone, supportedSettings: [], currentSettings: [])
        let ours = ControllerInfo(address: TransportWorld.lock, supportedSettings: [], currentSettings: [.powered, .lowEnergy])
        kernel.expect(bytes("03 00 ff ff 00 00"), reply: FakeKernel.complete(0x0003, .none, [2, 0, 0, 0, 1, 0]))
        kernel.expect(bytes("04 00 00 00 00 00"), reply: FakeKernel.complete(0x0004, MgmtIndex(0), other.encoded()))
        kernel.expect(bytes("04 00 01 00 00 00"), reply: FakeKernel.complete(0x0004, MgmtIndex(1), ours.encoded()))
        let transport = try KernelTransport.open(adapter: "C0:FF:EE:00:00:01",
                                                 mgmt: MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop),
                                                 sockets: FakeLinkSockets(), hciEvents: FakeHCIEvents())
        #expect(transport.index == MgmtIndex(1))
        #expect(transport.state == .poweredOn)
    }

    @Test func transportOnThisHostFailsWithNoBluetoothNotACrash() throws {
        let mock = SyscallMock()
        mock.fail("socket", with: .addressFamilyNotSupported)
        let error = SyscallMock.with(mock) {
            #expect(throws: KernelError.self) { _ = try KernelTransport.open(adapter: "hci0", loop: PosixEventLoop()) }
        }
        #expect(error?.code == .noBluetooth)
        #expect("\(error!)".hasPrefix("no Bluetooth support in this kernel: socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI): "))
        #expect(mock.trace == ["socket"])
    }

    /// The same, with the real socket(2), where the host kernel really has no Bluetooth.
    @Test(.enabled(if: !hostHasBluetooth, "this kernel has Bluetooth"))
    func theRealSocketCallOnAKernelWithoutBluetooth() {
        let error = #expect(throws: KernelError.self) { _ = try KernelTransport.open(adapter: "hci0", loop: PosixEventLoop()) }
        #expect(error?.code == .noBluetooth)
        #expect(error?.errno == .addressFamilyNotSupported)
    }

    /// The timing first: the advertising interval, and the whole connection interval range as
    /// the one the lock accepts (0x0006–0x0C80), so its kernel never asks a central for another
    /// (SystemConfiguration.peripheral); then the instance.
    @Test func advertisingIsIntervalThenInstance() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        let start = world.kernel.received.count
        let ad = Advertisement(data: AdvertisingData(flags: 0x06, localName: "Door"), interval: .milliseconds(100))
        try world.transport.startAdvertising(ad)
        #expect(world.transport.isAdvertising, "mirrored at once")
        #expect(world.sockets.listened == [TransportWorld.lock], "the lock listens on its ATT channel")
        try world.settle()
        #expect(world.kernel.received.dropFirst(start).map { $0.encoded() } == [
            bytes("4c 00 00 00 14 00 0a 00 02 a0 00 0b 00 02 a0 00 17 00 02 06 00 18 00 02 80 0c"),
            bytes("3e 00 00 00 11 00 01 03 00 00 00 00 00 00 00 06 00 05 09 44 6f 6f 72"),
        ])
        world.transport.stopAdvertising()
        #expect(!world.transport.isAdvertising)
        try world.settle()
        #expect(world.kernel.received.last?.encoded() == bytes("3f 00 00 00 01 00 01"))
    }

    /// Refused: not advertising (the mirror says what the kernel holds) until the retry takes.
    @Test func aRefusedInstanceCorrectsTheMirrorUntilTheRetryTakes() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        world.transport.retryBackoff = .init(first: .milliseconds(200), cap: .milliseconds(200))
        try world.settle()
        world.model.refusals[0x003E] = 0x0D
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try world.until { !world.failures.isEmpty }
        #expect(!world.transport.isAdvertising)
        #expect(world.failures.map(\.description) == ["mgmt command failed: Add Advertising (0x003e) on hci0 failed: Invalid Parameters (0x0d)"])
        try world.until { world.transport.isAdvertising }
        #expect(world.kernel.commands(.addAdvertising).count == 2)
    }

    @Test func nothingRadioWhilePoweredOff() throws {
        let world = try TransportWorld()
        #expect(throws: TransportError.self) { try world.transport.startAdvertising(Advertisement(data: AdvertisingData())) }
        #expect(throws: TransportError.self) { try world.transport.startScanning(ScanParameters()) }
        // The pending list is accepted while off, like mgmt Add Device.
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        #expect(world.transport.pendingConnections == [TransportWorld.lock])
        #expect(throws: TransportError.self) { try world.transport.addPendingConnection(to: TransportWorld.phone) }
    }

    @Test func pendingConnectionsAreAddDeviceAutoConnect() throws {
        let world = try TransportWorld()
        try world.settle()
        let start = world.kernel.received.count
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        world.transport.removePendingConnection(to: TransportWorld.lock)
        world.transport.removePendingConnection(to: TransportWorld.lock)  // not pending: nothing sent
        try world.settle()
        #expect(world.kernel.received.dropFirst(start).map { $0.encoded() } == [
            bytes("33 00 00 00 08 00 01 00 00 ee ff c0 01 02"),
            bytes("34 00 00 00 07 00 01 00 00 ee ff c0 01"),
        ])
        #expect(world.transport.pendingConnections.isEmpty)

        // A refused Add Device stays wanted and is asked again (KernelTransportRetryTests).
        world.transport.retryBackoff = .init(first: .milliseconds(10), cap: .milliseconds(10))
        world.model.refusals[0x0033] = 0x03
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.until { world.kernel.commands(.addDevice).count == 3 }
        #expect(world.transport.pendingConnections == [TransportWorld.lock], "a refused Add Device stays wanted")
        #expect(world.failures.count == 1)
    }

    @Test func aPowerCycleReassertsEverythingBeforeTheStateIsReported() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        try world.transport.setConnectionParameters(.kernelDefault)
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try world.transport.addPendingConnection(to: TransportWorld.phone)
        try world.settle()

        world.kernel.emit(FakeKernel.newSettings(TransportWorld.hci0, [.lowEnergy, .connectable]))
        try world.until { world.transport.state == .poweredOff }
        #expect(!world.transport.isAdvertising)
        #expect(world.transport.pendingConnections == [TransportWorld.phone], "kept: re-asserted on power-on")

        let start = world.kernel.received.count
        world.kernel.emit(FakeKernel.newSettings(TransportWorld.hci0, [.lowEnergy, .connectable, .powered]))
        try world.until { world.transport.state == .poweredOn }
        try world.settle()
        #expect(world.opcodes(since: start) == [0x004C, 0x004C, 0x003E, 0x0033, 0x0015],
                "timing, advertising interval, instance, Add Device, Get Connections")
        #expect(world.delegate.states == [.poweredOn, .poweredOff, .poweredOn])
        #expect(world.delegate.advertisingAtStateChange.last == true, "re-armed before the delegate heard")
    }

    @Test func whatAnotherClientRemovesIsPutBack() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        try world.transport.addPendingConnection(to: TransportWorld.phone)
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try world.settle()
        let start = world.kernel.received.count
        // bluetoothd initialising the adapter: Remove Device for all, Remove Advertising.
        world.kernel.emit(bytes("1b 00 00 00 07 00 02 00 00 ee ff c0 01"))
        world.kernel.emit(bytes("24 00 00 00 01 00 01"))
        world.kernel.emit(bytes("24 00 00 00 01 00 02"))  // not our instance
        world.kernel.emit(bytes("1b 00 00 00 07 00 09 00 00 ee ff c0 01"))  // not ours
        try world.until { world.kernel.received.count >= start + 3 }
        try world.settle()
        #expect(world.opcodes(since: start) == [0x0033, 0x004C, 0x003E])
    }

    @Test func aControllerThatGoesAndComesBackIsTakenUpAgain() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try world.transport.addPendingConnection(to: TransportWorld.phone)
        try world.settle()
        let listener = world.sockets.listener

        world.kernel.emit(bytes("05 00 00 00 00 00"))
        try world.until { world.transport.state == .poweredOff }
        #expect(listener?.isClosed == true)
        // Commands while the controller is gone are not sent.
        world.transport.removePendingConnection(to: TransportWorld.phone)
        try world.transport.addPendingConnection(to: TransportWorld.phone)

        // Another controller appears first (index 3, another address): ignored.
        let stranger = ControllerInfo(address: BluetoothAddress(string: "11:22:33:44:55:66")!, supportedSettings: [],
                                      currentSettings: [])
        let ours = ControllerInfo(address: TransportWorld.lock, supportedSettings: [], currentSettings: [.lowEnergy])
        world.model.settings = [.lowEnergy]
        let start = world.kernel.received.count
        world.kernel.respond = { [model = world.model] packet in
            if packet.code == 0x0004 {
                return [FakeKernel.complete(0x0004, packet.index, (packet.index == MgmtIndex(3) ? stranger : ours).encoded())]
            }
            return model.answer(packet)
        }
        world.kernel.emit(bytes("04 00 03 00 00 00"))
        world.kernel.emit(bytes("04 00 01 00 00 00"))
        try world.until { world.transport.state == .poweredOn }
        try world.settle()
        #expect(world.transport.index == MgmtIndex(1))
        let sent = world.kernel.received.dropFirst(start)
        #expect(sent.map(\.code) == [0x0004, 0x0004, 0x000D, 0x0009, 0x0007, 0x0005, 0x004C, 0x003E, 0x0033, 0x0015])
        #expect(sent.dropFirst(2).allSatisfy { $0.index == MgmtIndex(1) })
        #expect(world.sockets.listened.count == 2, "a new listener on the returned controller")
    }

    @Test func discoveryIsBoundedByTheCallerNotTheKernel() throws {
        let world = try TransportWorld()
        try world.settle()
        let start = world.kernel.received.count
        try world.transport.startScanning(ScanParameters(interval: .milliseconds(60), window: .milliseconds(30)))
        try world.settle()
        #expect(world.kernel.received.dropFirst(start).map { $0.encoded() } == [
            bytes("4c 00 00 00 0a 00 11 00 02 60 00 12 00 02 30 00"),
            bytes("23 00 00 00 01 00 06"),
        ])
        // A report: RSSI -60, EIR Flags + name.
        world.kernel.emit(bytes("12 00 00 00 17 00 01 00 00 ee ff c0 01 c4 00 00 00 00 09 00 02 01 06 05 09 44 6f 6f 72"))
        try world.until { world.delegate.reports.count == 1 }
        #expect(world.delegate.reports.first?.address == TransportWorld.lock)
        #expect(world.delegate.reports.first?.data.localName == "Door")
        #expect(world.delegate.reports.first?.rssi == -60)

        // The kernel ends LE discovery after 10.24 s; the transport starts it again.
        let beforeTimeout = world.kernel.received.count
        world.kernel.emit(bytes("13 00 00 00 02 00 06 00"))
        try world.until { world.kernel.received.count == beforeTimeout + 1 }
        #expect(world.kernel.received.last?.code == 0x0023)

        world.transport.stopScanning()
        world.kernel.emit(bytes("13 00 00 00 02 00 06 00"))  // the stop's own Discovering event
        try world.settle()
        #expect(world.kernel.received.last?.encoded() == bytes("24 00 00 00 01 00 06"))
        #expect(!world.transport.isScanning)
        world.kernel.emit(bytes("12 00 00 00 17 00 01 00 00 ee ff c0 01 c4 00 00 00 00 09 00 02 01 06 05 09 44 6f 6f 72"))
        try world.settle()
        #expect(world.delegate.reports.count == 1, "no reports once stopped")
    }

    @Test func connectionParametersAreValidatedThenSent() throws {
        let world = try TransportWorld()
        try world.settle()
        #expect(throws: TransportError.self) {
            try world.transport.setConnectionParameters(ConnectionParameters(supervisionTimeout: .milliseconds(40)))
        }
        try world.transport.setConnectionParameters(.kernelDefault)
        try world.settle()
        #expect(world.kernel.received.last?.code == 0x004C)
        #expect(world.kernel.received.last?.parameters.count == 30)
    }

    @Test func aRefusedPowerOnIsReportedAndLowEnergyMissingIsUnsupported() throws {
        let loop = PosixEventLoop()
        let kernel = FakeKernel(loop: loop)
        let model = KernelModel(settings: [])
        model.refusals[0x000D] = 0x0C  // Set Low Energy: Not Supported
        let info = ControllerInfo(address: TransportWorld.lock, supportedSettings: [.powered], currentSettings: [])
        kernel.expect(bytes("03 00 ff ff 00 00"), reply: FakeKernel.complete(0x0003, .none, [1, 0, 0, 0]))
        kernel.expect(bytes("04 00 00 00 00 00"), reply: FakeKernel.complete(0x0004, MgmtIndex(0), info.encoded()))
        kernel.respond = { model.answer($0) }
        let transport = try KernelTransport.open(adapter: "hci0", mgmt: MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop),
                                                 sockets: FakeLinkSockets(), hciEvents: FakeHCIEvents())
        var failures: [KernelError] = []
        transport.onFailure = { failures.append($0) }
        #expect(try loop.run(until: { transport.state == .unsupported }, timeout: .seconds(2)))
        #expect(failures.first?.message.hasPrefix("Set Low Energy (0x000d) on hci0 failed: Not Supported") == true)
    }
}

/// Whether this kernel has Bluetooth (the class directory exists once the stack is in).
let hostHasBluetooth: Bool = {
    var info = stat()
    return stat("/sys/class/bluetooth", &info) == 0
}()

/// What a lock or phone process that ended leaves in the kernel, and what the transport
/// must not send twice (the causes of the HIL suite's intermittent c and g).
@Suite struct KernelTransportLifecycleTests {
    static let removeInstance1 = bytes("3f 00 00 00 01 00 01")

    @Test func closingRemovesTheAdvertisingInstanceBeforeTheSocketCloses() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try world.settle()
        let start = world.kernel.received.count
        world.transport.close()
        #expect(world.kernel.received.dropFirst(start).map { $0.encoded() } == [Self.removeInstance1])
        #expect(!world.transport.mgmt.isOpen)
    }

    @Test func closingWithoutAdvertisingSendsNothing() throws {
        let world = try TransportWorld()
        try world.settle()
        let start = world.kernel.received.count
        world.transport.close()
        try world.loop.runOnce(timeout: .milliseconds(5))
        #expect(world.kernel.received.count == start)
    }

    /// A predecessor SIGKILLed: its instance still advertised and the phone linked to it.
    /// The new lock removes the instance at start and, once it advertises, drops the link
    /// it holds no socket for (before or after Get Connections answers).
    @Test(arguments: [false, true])
    func startRemovesAStaleInstanceAndAdvertisingDropsLinksWithNoSocket(advertiseFirst: Bool) throws {
        let world = try TransportWorld(address: TransportWorld.lock, settings: [.lowEnergy, .powered])
        world.model.connections = [TransportWorld.phone]
        let ad = Advertisement(data: AdvertisingData(localName: "Door"))
        if advertiseFirst { try world.transport.startAdvertising(ad) }
        try world.settle()
        #expect(world.kernel.received.prefix(3).map { $0.encoded() } == [
            bytes("03 00 ff ff 00 00"), bytes("04 00 00 00 00 00"), Self.removeInstance1,
        ])
        if !advertiseFirst {
            #expect(world.kernel.commands(.disconnect).isEmpty, "not before we advertise (a phone claims such links)")
            try world.transport.startAdvertising(ad)
            try world.settle()
        }
        #expect(world.kernel.commands(.disconnect).map(\.parameters) == [bytes("02 00 00 ee ff c0 01")])
        #expect(world.failures.isEmpty)
    }

    /// A power-off ends the link before its New Settings arrives: the instance must not be
    /// re-added meanwhile; power-on re-asserts it once.
    @Test func aPowerOffDoesNotReaddTheInstanceItsLinksEndedFor() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        world.transport.readvertiseDelay = .milliseconds(50)
        try world.settle()
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        let far = try #require(world.sockets.listener).push(TransportWorld.phone)
        try world.until { world.delegate.links.count == 1 }
        try world.settle()
        let start = world.kernel.received.count

        world.kernel.emit(FakeKernel.deviceDisconnected(TransportWorld.hci0, TransportWorld.phone, reason: 2))
        Glibc.close(far)
        try world.until { world.delegate.disconnects.count == 1 }
        world.kernel.emit(FakeKernel.newSettings(TransportWorld.hci0, [.lowEnergy, .connectable]))
        try world.until { world.transport.state == .poweredOff }
        // Past the delay: nothing was sent.
        _ = try world.loop.run(until: { false }, timeout: .milliseconds(150))
        #expect(world.opcodes(since: start) == [])

        world.kernel.emit(FakeKernel.newSettings(TransportWorld.hci0, [.lowEnergy, .connectable, .powered]))
        try world.until { world.transport.state == .poweredOn }
        try world.settle()
        #expect(world.opcodes(since: start) == [0x004C, 0x003E, 0x0015], "re-asserted once, on power-on")
    }

    /// After link loss the phone asks again; the kernel still holds the entry.
    @Test func addingAPendingConnectionTwiceSendsAddDeviceOnce() throws {
        let world = try TransportWorld()
        try world.settle()
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        #expect(world.kernel.commands(.addDevice).count == 1)
        // Removed by another client: put back once, and a later ask sends nothing more.
        world.kernel.emit(bytes("1b 00 00 00 07 00 01 00 00 ee ff c0 01"))
        try world.until { world.kernel.commands(.addDevice).count == 2 }
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        #expect(world.kernel.commands(.addDevice).count == 2)
    }
}
