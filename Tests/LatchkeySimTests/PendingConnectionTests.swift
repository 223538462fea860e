import LatchkeySim
import LatchkeyTransport
import Testing

/// Apple's recommended advertising interval for the first 30 s (Accessory Design
/// Guidelines, 20 ms): short enough that every 30 ms background scan window holds an event.
let fastAdvertisement = Advertisement(data: AdvertisingData(localName: "Latchkey"), interval: .milliseconds(20))

/// The bound on "comes into range → linked" when every background window holds an
/// advertising event: at most one scan interval plus one window until a window has heard
/// one, which is within advInterval + maximum advDelay + scanInterval here, plus one
/// connection interval of setup.
let fastLinkBound = fastAdvertisement.interval + .milliseconds(10) + ConnectionParameters.kernelDefault.scanInterval
    + ConnectionParameters.kernelDefault.connectionInterval

@Suite struct PendingConnectionTests {
    @Test func aPendingConnectionWaitsThirtyDaysWithNoTimerAndLinksWhenThePeerComesIntoRange() throws {
        let world = World(phonePosition: 500)
        world.lockApp.readvertise = fastAdvertisement
        try world.lock.startAdvertising(fastAdvertisement)
        try world.phone.addPendingConnection(to: World.lockAddress)

        world.loop.advance(by: .days(30))
        #expect(world.phone.pendingConnections == [World.lockAddress])
        #expect(world.phone.connectedLinks.isEmpty && world.phoneApp.connects.isEmpty)
        #expect(world.loop.pendingCount == 0, "nothing may spin while the peer is away")

        world.air.setPosition(1, of: World.phoneAddress)
        let back = world.loop.now
        #expect(world.loop.advance(until: { world.phoneApp.link != nil }, limit: .seconds(10)))
        #expect(world.loop.now - back <= fastLinkBound)
        #expect(world.phone.pendingConnections == [World.lockAddress], "the entry outlives the connection")
    }

    @Test func aPendingConnectionToAPeerThatNeverAdvertisesCostsNothingForThirtyDays() throws {
        let world = World()
        try world.phone.addPendingConnection(to: World.lockAddress)
        world.loop.advance(by: .days(30))
        #expect(world.loop.pendingCount == 0)
        #expect(world.phone.pendingConnections == [World.lockAddress] && world.phone.connectedLinks.isEmpty)

        try world.lock.startAdvertising(fastAdvertisement)
        let start = world.loop.now
        #expect(world.loop.advance(until: { world.phoneApp.link != nil }, limit: .seconds(10)))
        #expect(world.loop.now - start <= fastLinkBound)
    }

    @Test func theLinkComesUpOneConnectionIntervalAfterTheFirstAdvertisingEventInsideABackgroundWindow() throws {
        let world = World()
        let observerDevice = world.air.addDevice(address: BluetoothAddress(0x77), position: 2)
        let observer = AppRecorder(loop: world.loop, attachedTo: observerDevice)
        try observerDevice.startScanning(continuousScan)
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.loop.advance(by: .seconds(1))
        // Stop right at an advertising event. The next comes 100–110 ms later: starting the
        // background scan 65 ms after this one puts it 35–45 ms into the scan, outside the
        // first window.
        let heardSoFar = observer.reports.count
        #expect(world.loop.advance(until: { observer.reports.count > heardSoFar }, limit: .milliseconds(110)))
        world.loop.advance(by: .milliseconds(65))

        let t0 = world.loop.now
        try world.phone.addPendingConnection(to: World.lockAddress)  // background windows [t0 + k·60, +30) ms
        #expect(world.loop.advance(until: { world.phoneApp.link != nil }, limit: .seconds(10)))

        let events = observer.reportTimes.filter { $0 >= t0 }
        let heard = try #require(events.first { ($0 - t0).nanoseconds % 60_000_000 < 30_000_000 })
        #expect(events.contains { $0 < heard }, "the first event falls outside the window and must be missed")
        #expect(world.phoneApp.connects.first?.time == heard + .milliseconds(30))
        #expect(events.last == heard, "a legacy advertiser stops advertising on the connection request")
    }

    @Test func theLinkArrivesWithinTheBoundWhateverTheArrivalPhase() throws {
        for seed in UInt64(1)...12 {
            let world = World(seed: seed, phonePosition: 500)
            try world.lock.startAdvertising(fastAdvertisement)
            try world.phone.addPendingConnection(to: World.lockAddress)
            world.loop.advance(by: .milliseconds(1_000 + Int64(seed) * 7))
            world.air.setPosition(0, of: World.phoneAddress)
            let back = world.loop.now
            #expect(world.loop.advance(until: { world.phoneApp.link != nil }, limit: .seconds(10)))
            #expect(world.loop.now - back <= fastLinkBound, "seed \(seed)")
        }
    }

    @Test func bothEndsGetTheirRoleAndTheAdvertiserStopsAdvertising() throws {
        let world = try World.linked()
        #expect(world.phoneLink.role == .central && world.phoneLink.peer == World.lockAddress)
        #expect(world.lockLink.role == .peripheral && world.lockLink.peer == World.phoneAddress)
        #expect(world.phoneLink.id == world.lockLink.id)
        #expect(world.phoneApp.connects.first?.time == world.lockApp.connects.first?.time)
        #expect(!world.lock.isAdvertising)
        #expect(world.phoneLink.maximumTransmissionUnit == 247)
    }

    @Test func removingThePendingEntryMeansNoLink() throws {
        let world = World(phonePosition: 500)
        try world.lock.startAdvertising(World.lockAdvertisement)
        try world.phone.addPendingConnection(to: World.lockAddress)
        world.loop.advance(by: .seconds(60))
        world.phone.removePendingConnection(to: World.lockAddress)
        world.air.setPosition(1, of: World.phoneAddress)
        world.loop.advance(by: .seconds(60))
        #expect(world.phoneApp.connects.isEmpty && world.lock.isAdvertising)
        #expect(world.phone.pendingConnections.isEmpty)
        #expect(world.loop.pendingCount == 0)
    }

    @Test func removingThePendingEntryKeepsTheLinkButEndsTheRelinking() throws {
        let world = try World.linked()
        world.phone.removePendingConnection(to: World.lockAddress)
        world.loop.advance(by: .seconds(10))
        #expect(world.phoneLink.isConnected)

        world.air.setPosition(100, of: World.phoneAddress)
        world.loop.advance(by: .seconds(1))
        world.air.setPosition(1, of: World.phoneAddress)
        world.loop.advance(by: .seconds(60))
        #expect(world.phoneApp.connects.count == 1 && world.phoneApp.disconnects.count == 1)
        #expect(world.lock.isAdvertising)
    }

    @Test func twoPendingEntriesBothLink() throws {
        let world = World()
        let backDoorAddress = BluetoothAddress(0xD0_0D_00_00_00_03)
        let backDoor = world.air.addDevice(address: backDoorAddress, position: -2)
        let backDoorApp = AppRecorder(loop: world.loop, attachedTo: backDoor)
        try world.lock.startAdvertising(World.lockAdvertisement)
        try backDoor.startAdvertising(World.lockAdvertisement)
        try world.phone.addPendingConnection(to: World.lockAddress)
        try world.phone.addPendingConnection(to: backDoorAddress)

        #expect(world.loop.advance(until: { world.phone.connectedLinks.count == 2 }, limit: .seconds(10)))
        #expect(Set(world.phoneApp.connects.map(\.link.peer)) == [World.lockAddress, backDoorAddress])
        #expect(world.lockApp.connects.count == 1 && backDoorApp.connects.count == 1)
        world.loop.advance(by: .seconds(10))
        #expect(world.phoneApp.connects.count == 2, "a linked entry is not connected twice")
    }

    @Test func theEntryRelinksByItselfAfterALinkLossWhenThePeerIsBack() throws {
        let world = try World.linked()
        let first = world.phoneLink
        world.air.setPosition(200, of: World.phoneAddress)
        world.loop.advance(by: .hours(1))
        #expect(world.phoneApp.disconnects.map(\.reason) == [.connectionTimeout])
        #expect(world.lock.isAdvertising, "the lock application restarted advertising")
        #expect(world.loop.pendingCount == 0)

        world.lockApp.readvertise = nil
        try world.lock.startAdvertising(fastAdvertisement)
        world.air.setPosition(1, of: World.phoneAddress)
        let back = world.loop.now
        #expect(world.loop.advance(until: { world.phoneApp.connects.count == 2 }, limit: .seconds(10)))
        #expect(world.loop.now - back <= fastLinkBound)
        #expect(world.phoneLink.id != first.id && world.phoneLink.isConnected && !first.isConnected)
    }

    @Test func aPendingEntryAddedWhilePoweredOffWaitsForPowerOn() throws {
        let world = World()
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.phone.powerOff()
        try world.phone.addPendingConnection(to: World.lockAddress)
        world.loop.advance(by: .seconds(10))
        #expect(world.phoneApp.connects.isEmpty && world.phone.pendingConnections == [World.lockAddress])

        world.phone.powerOn()
        #expect(world.loop.advance(until: { world.phoneApp.link != nil }, limit: .seconds(10)))
    }
}

extension Duration {
    static func hours(_ n: Int64) -> Duration { .seconds(n * 3_600) }
}
