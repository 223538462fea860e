import LatchkeyATT
import LatchkeyManagers
import LatchkeySim
import LatchkeyTransport
import Testing

/// Far beyond the air's 10 m range.
let awayPosition = 500.0

@Suite struct ConnectTests {
    @Test func aConnectPendingForAWeekLinksTheMomentTheLockComesIntoRange() throws {
        let home = try Home(phonePosition: awayPosition)
        let p = home.lockPeripheral
        try home.central.connect(p, options: ConnectOptions(notifyOnConnection: true))

        home.loop.advance(by: .days(7))
        #expect(home.phoneApp.events == [.state(.poweredOn)], "no connection and no failure in a week")
        #expect(home.central.pendingConnects == [Addresses.lock: ConnectOptions(notifyOnConnection: true)])
        #expect(home.phone.controller.pendingConnections == [Addresses.lock], "held below the app, by the system")
        #expect(p.state == .connecting)
        #expect(home.loop.pendingCount == 0, "no retry timer, no watchdog: nothing spins while the lock is away")

        home.air.setPosition(1, of: Addresses.phone)
        let back = home.loop.now
        #expect(home.loop.advance(until: { !home.phoneApp.connects.isEmpty }, limit: .seconds(10)))
        let linked = try #require(home.phoneApp.times { $0 == .connected(Addresses.lock) }.first)
        #expect(linked - back <= Timing.linkBound)
        #expect(p.state == .connected)
        #expect(home.central.pendingConnects.isEmpty, "one request, one connection")
        #expect(home.central.connectedOptions[Addresses.lock] == ConnectOptions(notifyOnConnection: true))
        #expect(home.lockApp.events.contains(.connected(Addresses.phone)))
    }

    @Test func theWeekLongWaitLinksWithinTheBoundWhateverTheArrivalPhase() throws {
        for seed in UInt64(1)...8 {
            let home = try Home(seed: seed, phonePosition: awayPosition)
            try home.central.connect(home.lockPeripheral)
            home.loop.advance(by: .days(7) + .milliseconds(Int64(seed) * 13))
            home.air.setPosition(1, of: Addresses.phone)
            let back = home.loop.now
            #expect(home.loop.advance(until: { !home.phoneApp.connects.isEmpty }, limit: .seconds(10)))
            #expect(home.loop.now - back <= Timing.linkBound, "seed \(seed)")
        }
    }

    @Test func aCancelledPendingConnectNeverLinksEvenInRange() throws {
        let home = try Home(phonePosition: awayPosition)
        let p = home.lockPeripheral
        try home.central.connect(p)
        home.loop.advance(by: .hours(5))
        home.central.cancelPeripheralConnection(p)
        #expect(home.central.pendingConnects.isEmpty && home.phone.controller.pendingConnections.isEmpty)
        #expect(p.state == .disconnected)

        home.air.setPosition(1, of: Addresses.phone)
        home.loop.advance(by: .seconds(60))
        #expect(home.phoneApp.connects.isEmpty)
        #expect(!home.lockApp.events.contains(.connected(Addresses.phone)))
        #expect(home.lock.controller.isAdvertising)
    }

    @Test func cancellingALiveConnectionReportsADisconnectWithoutError() throws {
        let home = try Home()
        let p = try home.connected()
        home.central.cancelPeripheralConnection(p)
        #expect(p.state == .disconnecting)
        let cancelled = home.loop.now
        #expect(home.loop.advance(until: { !home.phoneApp.disconnects.isEmpty }, limit: .seconds(1)))
        // The LL_TERMINATE_IND goes at the next connection event.
        #expect(home.loop.now - cancelled <= Timing.connection.connectionInterval)
        #expect(home.phoneApp.disconnects.map(\.0) == [Addresses.lock])
        #expect(home.phoneApp.disconnects.map(\.1) == [nil])
        #expect(p.state == .disconnected)

        home.loop.advance(by: .seconds(60))
        #expect(home.lockApp.disconnects == [.remoteUserTerminated])
        #expect(home.phoneApp.connects == [Addresses.lock], "a cancelled connection does not come back")
        #expect(home.central.pendingConnects.isEmpty && home.phone.controller.pendingConnections.isEmpty)
    }

    @Test func twoPendingConnectsToTwoLocksBothLink() throws {
        let home = try Home(phonePosition: awayPosition)
        let backDoor = try Lock(air: home.air, loop: home.loop, address: Addresses.backDoor, position: -3,
                                name: "Backdoor")
        try home.central.connect(home.lockPeripheral)
        try home.central.connect(home.phone.peripheral(Addresses.backDoor))
        home.loop.advance(by: .days(2))
        #expect(Set(home.central.pendingConnects.keys) == [Addresses.lock, Addresses.backDoor])
        #expect(home.phone.controller.pendingConnections == [Addresses.lock, Addresses.backDoor])

        home.air.setPosition(1, of: Addresses.phone)
        let back = home.loop.now
        #expect(home.loop.advance(until: { home.phoneApp.connects.count == 2 }, limit: .seconds(10)))
        #expect(Set(home.phoneApp.connects) == [Addresses.lock, Addresses.backDoor])
        #expect(home.loop.now - back <= Timing.linkBound * 2)
        #expect(home.central.retrieveConnectedPeripherals(withServices: []).map(\.identifier)
            == [Addresses.lock, Addresses.backDoor].sorted())
        #expect(backDoor.app.events.contains(.connected(Addresses.phone)))
        home.loop.advance(by: .seconds(10))
        #expect(home.phoneApp.connects.count == 2)
    }

    @Test func eachOfTwoPendingConnectsIsCancellableOnItsOwn() throws {
        let home = try Home(phonePosition: awayPosition)
        _ = try Lock(air: home.air, loop: home.loop, address: Addresses.backDoor, position: -3, name: "Backdoor")
        let backDoor = home.phone.peripheral(Addresses.backDoor)
        try home.central.connect(home.lockPeripheral)
        try home.central.connect(backDoor)
        home.loop.advance(by: .hours(1))
        home.central.cancelPeripheralConnection(backDoor)
        #expect(home.phone.controller.pendingConnections == [Addresses.lock])

        home.air.setPosition(1, of: Addresses.phone)
        home.loop.advance(by: .seconds(30))
        #expect(home.phoneApp.connects == [Addresses.lock])
        #expect(backDoor.state == .disconnected)
    }

    @Test func linkLossThenConnectAgainInTheCallbackRelinksWhenBack() throws {
        let home = try Home()
        let p = try home.connected()
        home.phoneApp.onDisconnect = { central, peripheral, _ in try? central.connect(peripheral) }

        home.air.setPosition(awayPosition, of: Addresses.phone)
        let left = home.loop.now
        home.loop.advance(by: .hours(3))
        #expect(home.phoneApp.disconnects.map(\.1) == [.disconnected(.connectionTimeout)])
        // The supervision timeout counts from the last connection event before the walk.
        let lost = try #require(home.phoneApp.times { if case .disconnected = $0 { true } else { false } }.first)
        #expect(lost - left <= Timing.connection.supervisionTimeout && lost - left > Timing.connection.supervisionTimeout
            - Timing.connection.connectionInterval)
        #expect(home.central.pendingConnects.keys.contains(Addresses.lock), "asked again in the callback")
        #expect(home.phone.controller.pendingConnections == [Addresses.lock])
        #expect(p.state == .connecting)
        #expect(home.lockApp.disconnects == [.connectionTimeout])
        #expect(home.loop.pendingCount == 0)

        home.air.setPosition(1, of: Addresses.phone)
        let back = home.loop.now
        #expect(home.loop.advance(until: { home.phoneApp.connects.count == 2 }, limit: .seconds(10)))
        #expect(home.loop.now - back <= Timing.linkBound)
        #expect(p.state == .connected)
        // The new link carries GATT: a discovery goes through it.
        p.discoverServices()
        #expect(home.loop.advance(until: { home.phoneApp.events.last == .discoveredServices([TestGATT.service], nil) },
                                  limit: .seconds(5)))
    }

    @Test func linkLossWithoutAskingAgainWithdrawsTheEntryAndNeverRelinks() throws {
        let home = try Home()
        let p = try home.connected()
        #expect(home.phone.controller.pendingConnections == [Addresses.lock], "the kernel entry stays while linked")

        home.air.setPosition(awayPosition, of: Addresses.phone)
        home.loop.advance(by: .hours(1))
        #expect(home.phoneApp.disconnects.map(\.1) == [.disconnected(.connectionTimeout)])
        #expect(home.central.pendingConnects.isEmpty)
        #expect(home.phone.controller.pendingConnections.isEmpty, "one request, one connection")
        #expect(p.state == .disconnected)

        home.air.setPosition(1, of: Addresses.phone)
        home.loop.advance(by: .seconds(60))
        #expect(home.phoneApp.connects == [Addresses.lock])
        #expect(home.lock.controller.isAdvertising, "the lock was reachable all along")
    }
}
