import LatchkeyATT
import LatchkeyManagers
import LatchkeySim
import LatchkeyTransport
import Testing

/// Execution modes on the simulated radio: what background mode changes for each role.
@Suite struct CentralExecutionModeTests {
    @Test func aBackgroundScanWithoutAServiceFilterIsRefused() throws {
        let home = try Home()
        try home.central.setExecutionMode(.background)
        #expect(throws: BluetoothError.self) { try home.central.scanForPeripherals(withServices: nil) }
        #expect(throws: BluetoothError.self) { try home.central.scanForPeripherals(withServices: []) }
        #expect(!home.central.isScanning && !home.phone.controller.isScanning)
        do {
            try home.central.scanForPeripherals(withServices: nil)
        } catch {
            #expect("\(error)".contains("background mode must scan for specific services"))
        }
        try home.central.scanForPeripherals(withServices: [TestGATT.service])
        #expect(home.central.isScanning)
    }

    @Test func backgroundIgnoresAllowDuplicatesAndCoalescesRepeatedDiscoveries() throws {
        let home = try Home()
        let options = ScanOptions(allowDuplicates: true, duration: .seconds(10))
        try home.central.scanForPeripherals(withServices: [TestGATT.service], options: options)
        home.loop.advance(by: .seconds(10))
        let foreground = home.phoneApp.discoveries.count { $0 == Addresses.lock }
        #expect(foreground > 10, "foreground with allow-duplicates reports every heard packet")

        try home.central.setExecutionMode(.background)
        try home.central.scanForPeripherals(withServices: [TestGATT.service], options: options)
        home.loop.advance(by: .seconds(10))
        #expect(home.phoneApp.discoveries.count { $0 == Addresses.lock } == foreground + 1,
                "one discovery for the whole background scan")
    }

    @Test func backgroundScanTimingReachesTheTransportForExplicitAndAutoConnectScans() throws {
        let home = try Home()
        try home.central.scanForPeripherals(withServices: [TestGATT.service])
        #expect(home.phone.controller.scanParameters?.interval == .milliseconds(60))

        try home.central.setExecutionMode(.background)
        let scan = try #require(home.phone.controller.scanParameters)
        #expect(scan.interval == .milliseconds(1_280) && scan.window == .microseconds(11_250) && scan.filterDuplicates)
        #expect(home.phone.controller.connectionParameters.scanInterval == .milliseconds(1_280))
        #expect(home.phone.controller.connectionParameters.scanWindow == .microseconds(11_250))
        #expect(home.central.isScanning, "a filtered scan carries on with the new timing")

        try home.central.setExecutionMode(.foreground)
        #expect(home.phone.controller.connectionParameters == .kernelDefault)
        #expect(home.phone.controller.scanParameters?.interval == .milliseconds(60))
    }

    @Test func switchingToBackgroundEndsAnUnfilteredScan() throws {
        let home = try Home()
        try home.central.scanForPeripherals(withServices: nil)
        try home.central.setExecutionMode(.background)
        #expect(!home.central.isScanning && !home.phone.controller.isScanning)
        #expect(home.phoneApp.scanStops == [.stopped])
    }

    @Test func theSlowerAutoConnectScanStillRelinksInBackground() throws {
        let home = try Home(phonePosition: 300)
        try home.central.setExecutionMode(.background)
        try home.central.connect(home.lockPeripheral)
        home.loop.advance(by: .seconds(60))
        #expect(home.phoneApp.connects.isEmpty)
        home.air.setPosition(1, of: Addresses.phone)
        #expect(home.loop.advance(until: { home.phoneApp.connects == [Addresses.lock] }, limit: .seconds(10)))
    }
}

@Suite struct PeripheralExecutionModeTests {
    private func interval(_ home: Home) -> Duration? { home.lock.controller.advertisement?.interval }

    @Test func theAccessoryScheduleIsFastForThirtySecondsThenSlowAndFastAgainAfterADisconnection() throws {
        let home = try Home(phonePosition: 300)
        let pm = home.lock.manager
        pm.advertisingSchedule = .accessoryGuidance
        let start = home.loop.now
        #expect(interval(home) == .milliseconds(20))
        home.loop.advance(to: start + .seconds(30) - .nanoseconds(1))
        #expect(interval(home) == .milliseconds(20))
        home.loop.advance(by: .nanoseconds(1))
        #expect(interval(home) == .microseconds(152_500))

        // A phone comes, links, leaves: the disconnection restarts the fast phase.
        try home.central.connect(home.lockPeripheral)
        home.air.setPosition(1, of: Addresses.phone)
        #expect(home.loop.advance(until: { !home.lockApp.disconnects.isEmpty || home.phoneApp.connects.count == 1 },
                                  limit: .seconds(10)))
        home.air.setPosition(300, of: Addresses.phone)
        #expect(home.loop.advance(until: { !home.lockApp.disconnects.isEmpty }, limit: .seconds(10)))
        let lost = home.loop.now
        #expect(interval(home) == .milliseconds(20))
        home.loop.advance(to: lost + .seconds(30) - .nanoseconds(1))
        #expect(interval(home) == .milliseconds(20))
        home.loop.advance(by: .nanoseconds(1))
        #expect(interval(home) == .microseconds(152_500))
    }

    @Test func backgroundAdvertisingDropsTheLocalNameAndIsSlower() throws {
        let home = try Home()
        let pm = home.lock.manager
        pm.setExecutionMode(.background)
        let switched = home.loop.now
        let ad = try #require(home.lock.controller.advertisement)
        #expect(ad.data.localName == nil && ad.data.serviceUUIDs == [TestGATT.service])
        #expect(ad.interval == .microseconds(152_500))
        home.loop.advance(to: switched + .seconds(30))
        #expect(interval(home) == .microseconds(1_022_500))

        // Over the air: a scanning phone hears the service but no name.
        try home.central.scanForPeripherals(withServices: [TestGATT.service])
        home.loop.advance(by: .seconds(10))
        #expect(home.phoneApp.events.contains(.discovered(Addresses.lock, name: nil)))

        pm.setExecutionMode(.foreground)
        #expect(home.lock.controller.advertisement?.data.localName == "Latchkey")
        #expect(interval(home) == .milliseconds(20), "the app's own interval without a schedule")
    }
}
