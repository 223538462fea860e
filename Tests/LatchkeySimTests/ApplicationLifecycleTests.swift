import LatchkeySim
import LatchkeyTransport
import Testing

/// The application comes and goes; the controller (the "system") stays.
@Suite struct ApplicationLifecycleTests {
    @Test func detachingKeepsThePendingListAndDropsTheUnclaimedLinkAfterTwoSeconds() throws {
        let world = try World.linked()
        try world.phone.startScanning(continuousScan)
        let detachedAt = world.loop.now
        world.phone.detachApplication()
        #expect(world.phone.delegate == nil && world.phoneLink.delegate == nil)
        #expect(!world.phone.isScanning && !world.phone.isAdvertising)
        #expect(world.phone.pendingConnections == [World.lockAddress])

        world.loop.advance(to: detachedAt + SimulatedLink.unclaimedLinkTimeout - .nanoseconds(1))
        #expect(world.lockLink.isConnected && world.phone.connectedLinks.count == 1)
        world.loop.advance(by: .nanoseconds(1))
        #expect(world.phone.connectedLinks.isEmpty, "at 2 s the controller starts the drop")

        // The drop goes over the air at the next connection event after the 2 s.
        #expect(world.loop.advance(until: { !world.lockApp.disconnects.isEmpty }, limit: connectionInterval))
        #expect(world.lockApp.disconnectReasons == [.remoteUserTerminated])
        #expect(world.phoneApp.disconnects.isEmpty, "the dead application hears nothing")

        // The system still holds the request: it links again by itself when the lock readvertises.
        #expect(world.loop.advance(until: { world.lockApp.connects.count == 2 }, limit: .seconds(5)))
        #expect(world.phone.connectedLinks.count == 1 && world.phoneApp.connects.count == 1)
    }

    @Test func aRelaunchedApplicationAdoptsTheLinkWithinTwoSeconds() throws {
        let world = try World.linked()
        world.phone.detachApplication()
        world.loop.advance(by: .milliseconds(1_500))

        let relaunched = AppRecorder(loop: world.loop, attachedTo: world.phone)
        let adopted = try #require(world.phone.connectedLinks.first)
        adopted.delegate = relaunched
        world.loop.advance(by: .seconds(10))
        #expect(adopted.isConnected && world.lockApp.disconnects.isEmpty)

        #expect(world.lockLink.send([0x1B, 0x03, 0x00, 0x01]) == .sent)
        world.loop.advance(by: connectionInterval)
        #expect(relaunched.receivedPDUs == [[0x1B, 0x03, 0x00, 0x01]])
    }

    @Test func aLinkMadeWhileTheApplicationIsGoneWaitsTwoSecondsForItToClaimIt() throws {
        let world = World(phonePosition: 300)
        try world.lock.startAdvertising(fastAdvertisement)
        try world.phone.addPendingConnection(to: World.lockAddress)
        world.phone.detachApplication()
        world.loop.advance(by: .days(2))
        world.air.setPosition(1, of: World.phoneAddress)

        #expect(world.loop.advance(until: { !world.phone.connectedLinks.isEmpty }, limit: .seconds(1)))
        #expect(world.phoneApp.connects.isEmpty)
        world.loop.advance(by: .seconds(1))
        let relaunched = AppRecorder(loop: world.loop, attachedTo: world.phone)
        world.phone.connectedLinks.first?.delegate = relaunched
        world.loop.advance(by: .seconds(30))
        #expect(world.lockApp.connects.count == 1 && world.lockApp.disconnects.isEmpty)
        #expect(world.phone.connectedLinks.count == 1)
    }

    @Test func aDidConnectThatDoesNotClaimTheLinkLosesItAfterTwoSeconds() throws {
        let world = World()
        world.phoneApp.claimsLinks = false
        try world.lock.startAdvertising(World.lockAdvertisement)
        try world.phone.addPendingConnection(to: World.lockAddress)
        #expect(world.loop.advance(until: { world.phoneApp.link != nil }, limit: .seconds(5)))
        let up = world.loop.now

        #expect(world.loop.advance(until: { !world.lockApp.disconnects.isEmpty }, limit: .seconds(5)))
        let dropped = try #require(world.lockApp.disconnects.first).time
        #expect(dropped > up + SimulatedLink.unclaimedLinkTimeout)
        #expect(dropped <= up + SimulatedLink.unclaimedLinkTimeout + connectionInterval)
        #expect(world.lockApp.disconnectReasons == [.remoteUserTerminated])
    }

    @Test func poweringOffDropsEveryLinkAndClearsThePendingList() throws {
        let world = try World.linked()
        world.phone.powerOff()
        #expect(world.phone.state == .poweredOff)
        #expect(world.phone.pendingConnections.isEmpty && world.phone.connectedLinks.isEmpty)
        #expect(world.phoneApp.states.isEmpty && world.phoneApp.disconnects.isEmpty, "callbacks come on the loop")

        world.loop.run()
        #expect(world.phoneApp.states == [.poweredOff])
        #expect(world.phoneApp.disconnectReasons == [.localHostTerminated])
        #expect(world.lockApp.disconnectReasons == [.remotePowerOff])
        #expect(throws: TransportError.self) { try world.phone.startScanning(continuousScan) }

        world.phone.powerOn()
        world.loop.advance(by: .seconds(30))
        #expect(world.phoneApp.states == [.poweredOff, .poweredOn])
        #expect(world.lock.isAdvertising && world.phoneApp.connects.count == 1, "the cleared list does not relink")
    }

    @Test func aPeerOutOfRangeDoesNotHearThePowerOffAndTimesOut() throws {
        let world = try World.linked()
        world.loop.advance(to: world.event(3))
        world.air.setPosition(100, of: World.phoneAddress)
        world.phone.powerOff()
        world.loop.run()
        #expect(world.phoneApp.disconnectReasons == [.localHostTerminated])
        #expect(world.lockApp.disconnects.isEmpty)
        world.loop.advance(to: world.event(3) + supervisionTimeout)
        #expect(world.lockApp.disconnectReasons == [.connectionTimeout])
    }

    @Test func poweringOffStopsAdvertisingAndAPoweredOffRadioCannotAdvertise() throws {
        let world = World()
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.lock.powerOff()
        #expect(!world.lock.isAdvertising)
        #expect(throws: TransportError.self) { try world.lock.startAdvertising(World.lockAdvertisement) }
        try world.phone.startScanning(continuousScan)
        world.loop.advance(by: .seconds(5))
        #expect(world.phoneApp.reports.isEmpty && world.loop.pendingCount == 0)
    }
}
