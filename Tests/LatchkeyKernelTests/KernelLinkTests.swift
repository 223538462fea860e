#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// Links on socketpairs: the phone claims a link the kernel made, the lock accepts one;
/// PDUs, back-pressure and link loss.
@Suite struct KernelLinkTests {
    func send(_ fd: CInt, _ pdu: [UInt8]) {
        #expect(pdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } == pdu.count)
    }

    func receive(_ fd: CInt) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return n < 0 ? nil : Array(buffer.prefix(n))
    }

    /// A phone whose kernel holds the lock on its auto-connect list.
    func phoneWithPendingLock() throws -> TransportWorld {
        let world = try TransportWorld(address: TransportWorld.phone)
        try world.settle()
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.settle()
        return world
    }

    /// The phone with the lock linked: the link as reported, and the lock's end of it.
    func linkedPhone() throws -> (TransportWorld, any ATTLink, CInt) {
        let world = try phoneWithPendingLock()
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        try world.until { world.delegate.links.count == 1 }
        return (world, try #require(world.delegate.links.first), try #require(world.sockets.peerEnds[TransportWorld.lock]))
    }

    @Test func deviceConnectedForAPendingPeerOpensItsATTChannel() throws {
        let world = try phoneWithPendingLock()
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        try world.until { world.delegate.links.count == 1 }
        let link = try #require(world.delegate.links.first)
        #expect(link.peer == TransportWorld.lock)
        #expect(link.role == .central)
        #expect(link.maximumTransmissionUnit == 185)
        #expect(world.transport.connectedLinks.count == 1)

        // PDUs both ways, one per message.
        let far = try #require(world.sockets.peerEnds[TransportWorld.lock])
        #expect(link.send([0x02, 0xf7, 0x00]) == .sent)  // Exchange MTU Request
        #expect(receive(far) == [0x02, 0xf7, 0x00])
        send(far, [0x03, 0x17, 0x00])
        send(far, [0x1b, 0x03, 0x00, 0x01])
        try world.until { world.delegate.received.count == 2 }
        #expect(world.delegate.received == [[0x03, 0x17, 0x00], [0x1b, 0x03, 0x00, 0x01]])
    }

    /// A request's client waits for the answer, so the link reads nothing more in the turn that
    /// brought it (one recv per request, not a second that says EAGAIN); what did follow it is
    /// read on the next turn. Other PDUs are still read in batches.
    @Test func aRequestEndsTheTurnsReadingAndNothingBehindItIsLost() throws {
        let (world, _, far) = try linkedPhone()
        let mock = SyscallMock()
        try SyscallMock.with(mock) {
            send(far, [0x0A, 0x03, 0x00])              // Read Request
            send(far, [0x52, 0x05, 0x00, 0x01])        // Write Command right behind it
            try world.loop.runOnce(timeout: .seconds(1))
            #expect(world.delegate.received == [[0x0A, 0x03, 0x00]])
            #expect(mock.trace.filter { $0 == "recv" }.count == 1)
            try world.loop.runOnce(timeout: .seconds(1))
            #expect(world.delegate.received == [[0x0A, 0x03, 0x00], [0x52, 0x05, 0x00, 0x01]])
            // A response and a notification: one turn reads both, then EAGAIN.
            send(far, [0x0B, 0x01])
            send(far, [0x1B, 0x03, 0x00, 0x01])
            try world.loop.runOnce(timeout: .seconds(1))
            #expect(world.delegate.received.count == 4)
        }
    }

    @Test func linksNobodyAskedForAreLeftToTheKernel() throws {
        let world = try phoneWithPendingLock()
        let stranger = BluetoothAddress(string: "11:22:33:44:55:66")!
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, stranger))
        try world.settle()
        #expect(world.delegate.links.isEmpty)
        #expect(world.sockets.peerEnds.isEmpty)
    }

    /// The kernel linked the lock while the phone agent was gone (its Add Device entry
    /// survived); the restarted agent asks again and gets the link at once, whether the
    /// controller was still on or is powered on by the transport.
    @Test(arguments: [MgmtSettings.lowEnergy, [.lowEnergy, .powered]])
    func aPeerAlreadyLinkedIsClaimedWhenAskedFor(_ settings: MgmtSettings) throws {
        let world = try TransportWorld(address: TransportWorld.phone, settings: settings)
        world.model.connections = [TransportWorld.lock]
        try world.settle()
        #expect(world.delegate.links.isEmpty)
        try world.transport.addPendingConnection(to: TransportWorld.lock)
        try world.until { world.delegate.links.count == 1 }
        #expect(world.delegate.links.first?.peer == TransportWorld.lock)
    }

    @Test func anUnclaimedLinkIsClosed() throws {
        let world = try phoneWithPendingLock()
        world.delegate.claimsLinks = false
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        try world.until { world.delegate.links.count == 1 }
        #expect(world.transport.connectedLinks.isEmpty)
        let far = try #require(world.sockets.peerEnds[TransportWorld.lock])
        #expect(receive(far) == [], "end of stream: our socket is closed, the kernel drops the link")
    }

    @Test func linkLossCarriesTheReasonFromDeviceDisconnected() throws {
        let (world, _, far) = try linkedPhone()
        // The kernel queues Device Disconnected (reason 1: connection timeout) before it
        // fails the socket.
        world.kernel.emit(FakeKernel.deviceDisconnected(TransportWorld.hci0, TransportWorld.lock, reason: 1))
        Glibc.close(far)
        try world.until { world.delegate.disconnects.count == 1 }
        #expect(world.delegate.disconnects == [.connectionTimeout])
        #expect(world.transport.connectedLinks.isEmpty)
        let link = try #require(world.delegate.links.first)
        #expect(link.send([0x1b]) == .disconnected)

        // The kernel reconnects by itself (the entry is still there): claimed again.
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        try world.until { world.delegate.links.count == 2 }
        // Without a mgmt reason, end of stream is the peer's doing.
        Glibc.close(try #require(world.sockets.peerEnds[TransportWorld.lock]))
        try world.until { world.delegate.disconnects.count == 2 }
        #expect(world.delegate.disconnects.last == .remoteUserTerminated)
    }

    @Test func theReasonIsFoundEvenWhenTheMgmtSocketIsBehind() throws {
        let (world, _, far) = try linkedPhone()
        // More events than the mgmt client reads in one readiness callback (64), then the
        // disconnect: the link's end of stream is seen before the client reaches the event.
        for _ in 0..<MgmtClient.receiveBatch + 6 {
            world.kernel.emit(FakeKernel.newSettings(TransportWorld.hci0, [.powered, .lowEnergy, .connectable]))
        }
        world.kernel.emit(FakeKernel.deviceDisconnected(TransportWorld.hci0, TransportWorld.lock, reason: 1))
        Glibc.close(far)
        try world.until { world.delegate.disconnects.count == 1 }
        #expect(world.delegate.disconnects == [.connectionTimeout])
    }

    @Test func aFullSocketIsFullThenWritableOnce() throws {
        let (world, link, far) = try linkedPhone()
        let pdu = [UInt8](repeating: 0x52, count: 180)
        var sent = 0
        while link.send(pdu) == .sent { sent += 1 }
        #expect(sent > 0)
        #expect(link.send(pdu) == .full, "still full: nothing was queued")
        try world.loop.runOnce(timeout: .milliseconds(10))
        #expect(world.delegate.writable == 0)
        for _ in 0..<sent { _ = receive(far) }
        try world.until { world.delegate.writable == 1 }
        try world.loop.runOnce(timeout: .milliseconds(10))
        #expect(world.delegate.writable == 1, "one linkIsWritable per .full")
        #expect(link.send(pdu) == .sent)
    }

    @Test func disconnectClosesTheSocketAndAsksTheKernel() throws {
        let (world, link, far) = try linkedPhone()
        link.disconnect()
        #expect(world.delegate.disconnects.isEmpty, "never inside the caller's call")
        #expect(!link.isConnected)
        #expect(receive(far) == [], "our socket closed first, while the link is up")
        try world.until { world.delegate.disconnects == [.localHostTerminated] }
        try world.settle()
        #expect(world.kernel.received.last?.encoded() == bytes("14 00 00 00 07 00 01 00 00 ee ff c0 01"))
    }

    /// Was: any accept error closed the listener while `isAdvertising` stayed true, so the
    /// lock advertised and took no connection, forever. Now the listener pauses, reports,
    /// and accepts again after the backoff; the failing calls are bounded, not a spin.
    @Test func anAcceptErrorPausesTheListenerAndItAcceptsAgain() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        world.transport.links.listenerBackoff = (first: .milliseconds(10), cap: .milliseconds(20))
        try world.settle()
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        let listener = try #require(world.sockets.listener)
        let emfile = KernelError(.system, "accept4: Too many open files (errno 24)", errno: Errno(rawValue: 24))
        listener.failures = [emfile, emfile, emfile]
        let far = listener.push(TransportWorld.phone)
        try world.until { world.delegate.links.count == 1 }
        #expect(!listener.isClosed)
        #expect(world.transport.isAdvertising)
        #expect(world.failures.filter { $0.message.hasPrefix("ATT listener: ") }.count == 3)
        #expect(listener.accepts == 5, "three failures, each followed by a pause, the link, then nothing waiting")
        #expect(world.delegate.links.first?.peer == TransportWorld.phone)
        withExtendedLifetime(far) {}
    }

    @Test func theLockAcceptsIncomingLinks() throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        let listener = try #require(world.sockets.listener)
        let far = listener.push(TransportWorld.phone)
        try world.until { world.delegate.links.count == 1 }
        let link = try #require(world.delegate.links.first)
        #expect(link.role == .peripheral)
        #expect(link.peer == TransportWorld.phone)
        send(far, [0x02, 0x00, 0x02])
        try world.until { world.delegate.received == [[0x02, 0x00, 0x02]] }
        // Incoming Device Connected events are the listener's business: no claim.
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.phone, initiated: false))
        try world.settle()
        #expect(world.sockets.peerEnds.isEmpty)

        // The phone leaves: the advertising instance is re-added after the delay, so
        // advertising resumes.
        world.transport.readvertiseDelay = .milliseconds(20)
        let before = world.kernel.received.count
        Glibc.close(far)
        try world.until { world.delegate.disconnects.count == 1 }
        #expect(world.opcodes(since: before) == [], "not at once")
        try world.until { world.kernel.received.count >= before + 2 }
        try world.settle()
        #expect(world.opcodes(since: before) == [0x004C, 0x003E])
    }

    /// One linked central must not hide the lock: the instance is added again as soon as a
    /// central links (the controller stopped advertising for it). Where the kernel refuses it
    /// (the controller's LE states), that is reported once, the advertising stays asked for,
    /// and the next links do not try again.
    @Test(arguments: [false, true])
    func theLockAdvertisesAgainAsACentralLinks(controllerRefuses: Bool) throws {
        let world = try TransportWorld(address: TransportWorld.lock)
        try world.settle()
        try world.transport.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try world.settle()
        if controllerRefuses { world.model.refusals[0x003E] = 0x0B }
        let listener = try #require(world.sockets.listener)
        let before = world.kernel.received.count
        _ = listener.push(TransportWorld.phone)
        try world.until { world.delegate.links.count == 1 }
        try world.settle()
        #expect(world.opcodes(since: before) == [0x004C, 0x003E], "interval, then the instance, at once")
        #expect(world.transport.isAdvertising, "still asked for")
        #expect(world.transport.advertisesWhileLinked == !controllerRefuses)
        let warned = world.failures.filter { $0.message.contains("cannot advertise while a central is linked") }
        #expect(warned.count == (controllerRefuses ? 1 : 0))

        let second = world.kernel.received.count
        _ = listener.push(BluetoothAddress(string: "C0:FF:EE:00:00:03")!)
        try world.until { world.delegate.links.count == 2 }
        try world.settle()
        #expect(world.opcodes(since: second) == (controllerRefuses ? [] : [0x004C, 0x003E]))
    }

    @Test func aFailedClaimIsReported() throws {
        let world = try phoneWithPendingLock()
        world.sockets.claimFailure = KernelError(.system, "connect(ATT C0:FF:EE:00:00:01): Device or resource busy")
        world.kernel.emit(FakeKernel.deviceConnected(TransportWorld.hci0, TransportWorld.lock))
        try world.until { !world.failures.isEmpty }
        #expect(world.failures.first?.message.hasPrefix("could not open the ATT channel to C0:FF:EE:00:00:01") == true)
        #expect(world.delegate.links.isEmpty)
    }

    @Test func mtuIsTheChannelsCappedToATT() {
        #expect(L2CAPSockets.attMTU(channel: (672, 672)) == 517, "the kernel's default ATT channel")
        #expect(L2CAPSockets.attMTU(channel: (672, 247)) == 247)
        #expect(L2CAPSockets.attMTU(channel: (300, 0)) == 300, "an unset MTU does not count")
        #expect(L2CAPSockets.attMTU(channel: (10, 10)) == 23, "never below the LE default")
        #expect(L2CAPSockets.attMTU(channel: nil) == 247, "options unreadable: one DLE packet's worth")
    }

    @Test func socketErrorsMapToHCIReasons() {
        #expect(KernelLink.reason(for: .timedOut) == .connectionTimeout)
        #expect(KernelLink.reason(for: .connectionAborted) == .localHostTerminated)
        #expect(KernelLink.reason(for: .connectionReset) == .remoteUserTerminated)
        #expect(KernelLink.reason(for: nil) == .remoteUserTerminated)
    }
}
