import LatchkeyATT
import LatchkeySim
import LatchkeyTransport
import Testing

/// A scan that hears everything: window = interval, every event reported.
let continuousScan = ScanParameters(active: false, interval: .milliseconds(60), window: .milliseconds(60),
                                    filterDuplicates: false)

@Suite struct AdvertisingTests {
    @Test func advertisingReachesAnInRangeScannerAtTheIntervalPlusAdvDelay() throws {
        let world = World()
        try world.phone.startScanning(continuousScan)
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.loop.advance(by: .seconds(10))

        let times = world.phoneApp.reportTimes
        #expect(times.count > 85 && times.count <= 100)
        #expect(times.first! <= Instant.zero + .milliseconds(10))  // first event after one advDelay
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        // advInterval + advDelay, advDelay in 0...10 ms (Core Vol 6 Part B 4.4.2.2.1).
        #expect(gaps.allSatisfy { $0 >= .milliseconds(100) && $0 <= .milliseconds(110) })
        #expect(Set(gaps).count > 10, "advDelay must vary from event to event")
        #expect(world.phoneApp.reports.allSatisfy { $0.report.address == World.lockAddress && $0.report.connectable })
    }

    @Test func advertisingDoesNotReachAScannerOutOfRange() throws {
        let world = World(phonePosition: 10.5)  // default range is 10 m
        try world.phone.startScanning(continuousScan)
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.loop.advance(by: .seconds(5))
        #expect(world.phoneApp.reports.isEmpty)

        world.air.setPosition(10, of: World.phoneAddress)  // |Δ| = range is in range
        world.loop.advance(by: .seconds(1))
        #expect(world.phoneApp.reports.count >= 9)
    }

    @Test func aNarrowScanWindowHearsExactlyTheEventsInsideItsWindows() throws {
        let world = World()
        let reference = world.phoneApp
        let narrowDevice = world.air.addDevice(address: BluetoothAddress(0x33), position: 2)
        let narrow = AppRecorder(loop: world.loop, attachedTo: narrowDevice)
        try world.phone.startScanning(continuousScan)
        let narrowScan = ScanParameters(active: false, interval: .milliseconds(100), window: .milliseconds(20),
                                        filterDuplicates: false)
        try narrowDevice.startScanning(narrowScan)
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.loop.advance(by: .seconds(20))

        // Scan started at t = 0: it listens during [k·100 ms, k·100 ms + 20 ms).
        let expected = reference.reportTimes.filter { $0.nanoseconds % 100_000_000 < 20_000_000 }
        #expect(narrow.reportTimes == expected)
        #expect(!expected.isEmpty && expected.count < reference.reports.count / 2)
    }

    @Test func filterDuplicatesReportsEachAdvertiserOncePerSessionUnlessItsDataChanges() throws {
        let world = World()
        let unfilteredDevice = world.air.addDevice(address: BluetoothAddress(0x44), position: 2)
        let unfiltered = AppRecorder(loop: world.loop, attachedTo: unfilteredDevice)
        var filtering = continuousScan
        filtering.filterDuplicates = true
        try world.phone.startScanning(filtering)
        try unfilteredDevice.startScanning(continuousScan)
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.loop.advance(by: .seconds(5))
        #expect(world.phoneApp.reports.count == 1)
        #expect(unfiltered.reports.count > 40)

        var changed = World.lockAdvertisement
        changed.data.manufacturerData = [0x01]
        try world.lock.startAdvertising(changed)
        world.loop.advance(by: .seconds(5))
        #expect(world.phoneApp.reports.count == 2)
        #expect(world.phoneApp.reports.last?.report.data.manufacturerData == [0x01])

        try world.phone.startScanning(filtering)  // a new session forgets what it reported
        world.loop.advance(by: .seconds(1))
        #expect(world.phoneApp.reports.count == 3)
    }

    @Test func anActiveScanMergesTheScanResponseAndAPassiveOneDoesNot() throws {
        let world = World()
        let passiveDevice = world.air.addDevice(address: BluetoothAddress(0x55), position: 2)
        let passive = AppRecorder(loop: world.loop, attachedTo: passiveDevice)
        let uuid = BluetoothUUID(UInt16(0xFFF0))
        try world.phone.startScanning(ScanParameters(active: true, interval: .milliseconds(60), window: .milliseconds(60)))
        try passiveDevice.startScanning(ScanParameters(active: false, interval: .milliseconds(60), window: .milliseconds(60)))
        try world.lock.startAdvertising(Advertisement(
            data: AdvertisingData(serviceUUIDs: [uuid]),
            scanResponse: AdvertisingData(flags: nil, localName: "Front door")))
        world.loop.advance(by: .seconds(1))

        let active = try #require(world.phoneApp.reports.first?.report.data)
        #expect(active.localName == "Front door" && active.serviceUUIDs == [uuid])
        let plain = try #require(passive.reports.first?.report.data)
        #expect(plain.localName == nil && plain.serviceUUIDs == [uuid])
    }

    @Test func stoppingTheScanStopsReports() throws {
        let world = World()
        try world.phone.startScanning(continuousScan)
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.loop.advance(by: .seconds(1))
        let heard = world.phoneApp.reports.count
        world.phone.stopScanning()
        world.loop.advance(by: .seconds(1))
        #expect(heard > 0 && world.phoneApp.reports.count == heard)
        #expect(!world.phone.isScanning)
    }

    @Test func advertisingSchedulesNoTimerWhileNobodyCouldHearIt() throws {
        let world = World(phonePosition: 50)
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.loop.advance(by: .seconds(1))
        #expect(world.loop.pendingCount == 0)  // nobody scans

        try world.phone.startScanning(continuousScan)
        world.loop.advance(by: .seconds(1))
        #expect(world.loop.pendingCount == 0)  // the only scanner is out of range
        #expect(world.phoneApp.reports.isEmpty)

        world.air.setPosition(3, of: World.phoneAddress)
        #expect(world.loop.pendingCount == 1)  // one advertising event at a time
        world.loop.advance(by: .seconds(1))
        #expect(world.phoneApp.reports.count >= 9)
        #expect(world.lock.isAdvertising)
    }

    @Test func resumedAdvertisingKeepsItsPhaseAcrossSilentPeriods() throws {
        let world = World(phonePosition: 50)
        try world.phone.startScanning(continuousScan)
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.loop.advance(by: .days(30))
        world.air.setPosition(1, of: World.phoneAddress)
        let cameBack = world.loop.now
        world.loop.advance(by: .seconds(1))
        let first = try #require(world.phoneApp.reportTimes.first)
        #expect(first >= cameBack && first <= cameBack + .milliseconds(110))
    }

    @Test func rssiFallsWithDistance() throws {
        let world = World()
        let farDevice = world.air.addDevice(address: BluetoothAddress(0x66), position: 9)
        let far = AppRecorder(loop: world.loop, attachedTo: farDevice)
        try world.phone.startScanning(continuousScan)
        try farDevice.startScanning(continuousScan)
        try world.lock.startAdvertising(World.lockAdvertisement)
        world.loop.advance(by: .seconds(2))
        let near = world.phoneApp.reports.map { Int($0.report.rssi) }
        let distant = far.reports.map { Int($0.report.rssi) }
        // −59 dBm at 1 m, −20·log10(9) ≈ −19 dB more at 9 m, ±3 dB of noise.
        #expect(near.allSatisfy { (-62 ... -56).contains($0) })
        #expect(distant.allSatisfy { (-81 ... -75).contains($0) })
    }

    @Test func theSameSeedReplaysTheSameWorldAndAnotherSeedDoesNot() throws {
        func reportTimes(seed: UInt64) throws -> [Instant] {
            let world = World(seed: seed)
            try world.phone.startScanning(continuousScan)
            try world.lock.startAdvertising(World.lockAdvertisement)
            world.loop.advance(by: .seconds(3))
            return world.phoneApp.reportTimes
        }
        #expect(try reportTimes(seed: 7) == reportTimes(seed: 7))
        #expect(try reportTimes(seed: 7) != reportTimes(seed: 8))
    }

    @Test func theControllerRefusesWhatAControllerRefuses() throws {
        let world = World()
        #expect(throws: TransportError.self) {
            try world.lock.startAdvertising(Advertisement(data: AdvertisingData(), interval: .milliseconds(10)))
        }
        #expect(throws: TransportError.self) {
            try world.phone.startScanning(ScanParameters(interval: .milliseconds(30), window: .milliseconds(60)))
        }
        #expect(!world.lock.isAdvertising && !world.phone.isScanning)
    }
}
