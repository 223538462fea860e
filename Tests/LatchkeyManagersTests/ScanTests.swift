import LatchkeyATT
import LatchkeyManagers
import LatchkeySim
import LatchkeyTransport
import Testing

extension Home {
    /// A second advertiser nearby that does not offer the lock service.
    func addSpeaker() throws -> SimulatedController {
        let speaker = air.addDevice(address: Addresses.speaker, position: 2)
        try speaker.startAdvertising(Advertisement(
            data: AdvertisingData(serviceUUIDs: [BluetoothUUID(0x180F)], localName: "Speaker"),
            interval: .milliseconds(100)))
        return speaker
    }
}

@Suite struct ScanTests {
    @Test func theStateUpdateComesFirstEvenWhenTheAppStartsWorkRightAway() throws {
        let loop = ManualEventLoop()
        let air = SimulatedAir(loop: loop)
        let lock = try Lock(air: air, loop: loop, address: Addresses.lock, position: 0)  // adds and advertises at once
        let phone = Phone(air: air, loop: loop, position: 1)
        #expect(phone.app.events.isEmpty && lock.app.events.isEmpty, "nothing is delivered from inside init")

        try phone.manager.scanForPeripherals(withServices: nil)
        try phone.manager.connect(phone.peripheral(Addresses.lock))
        loop.advance(by: .seconds(1))

        #expect(phone.app.events.first == .state(.poweredOn))
        #expect(phone.app.events.dropFirst().contains(.connected(Addresses.lock)))
        #expect(phone.app.count { $0 == .state(.poweredOn) } == 1)
        #expect(lock.app.events.first == .state(.poweredOn))
        #expect(Array(lock.app.events.prefix(3))
            == [.state(.poweredOn), .added(TestGATT.service, nil), .startedAdvertising(nil)])
    }

    @Test func aServiceFilterLeavesOutAdvertisersWithoutTheService() throws {
        let home = try Home(phonePosition: 1)
        _ = try home.addSpeaker()
        try home.central.scanForPeripherals(withServices: [TestGATT.service])
        home.loop.advance(by: .seconds(5))
        #expect(home.phoneApp.discoveries == [Addresses.lock])
        #expect(home.phoneApp.events.contains(.discovered(Addresses.lock, name: "Latchkey")))

        home.central.stopScan()
        try home.central.scanForPeripherals(withServices: nil)
        home.loop.advance(by: .seconds(5))
        #expect(Set(home.phoneApp.discoveries) == [Addresses.lock, Addresses.speaker], "no filter hears both")
    }

    @Test func withoutAllowDuplicatesEachPeripheralIsDiscoveredOncePerScan() throws {
        let home = try Home()
        _ = try home.addSpeaker()
        try home.central.scanForPeripherals(withServices: nil, options: ScanOptions(allowDuplicates: false))
        home.loop.advance(by: .seconds(5))
        #expect(home.phoneApp.discoveries.sorted() == [Addresses.speaker, Addresses.lock].sorted())

        // A new scan is a new session: each is discovered once more.
        try home.central.scanForPeripherals(withServices: nil, options: ScanOptions(allowDuplicates: false))
        home.loop.advance(by: .seconds(5))
        #expect(home.phoneApp.discoveries.count { $0 == Addresses.lock } == 2)
        #expect(home.phoneApp.discoveries.count { $0 == Addresses.speaker } == 2)
    }

    @Test func withAllowDuplicatesEveryHeardAdvertisementIsReported() throws {
        let home = try Home()
        let speaker = try home.addSpeaker()
        try home.central.scanForPeripherals(withServices: nil, options: ScanOptions(allowDuplicates: true))
        home.loop.advance(by: .seconds(5))
        // The speaker advertises every 100–110 ms: ~45 events in 5 s, and a 30/60 ms scan hears
        // about half of them; the lock at 20–30 ms gives several times more.
        let fromSpeaker = home.phoneApp.discoveries.count { $0 == speaker.address }
        let fromLock = home.phoneApp.discoveries.count { $0 == Addresses.lock }
        #expect(fromSpeaker >= 10 && fromSpeaker <= 50)
        #expect(fromLock > 2 * fromSpeaker)
    }

    @Test func aBoundedScanEndsByItselfExactlyAtItsDuration() throws {
        let home = try Home()
        let duration = Duration.seconds(3)
        let start = home.loop.now
        try home.central.scanForPeripherals(withServices: nil, options: ScanOptions(duration: duration))

        home.loop.advance(to: start + duration - .milliseconds(1))
        #expect(home.central.isScanning && home.phone.controller.isScanning)
        #expect(home.phoneApp.scanStops.isEmpty)
        #expect(home.phoneApp.discoveries == [Addresses.lock])

        home.loop.advance(by: .milliseconds(1))
        #expect(home.phoneApp.scanStops == [.durationElapsed])
        #expect(home.phoneApp.times { $0 == .stoppedScan(.durationElapsed) } == [start + duration])
        #expect(!home.central.isScanning && !home.phone.controller.isScanning, "the radio scan is closed too")

        let reported = home.phoneApp.events.count
        home.loop.advance(by: .seconds(30))
        #expect(home.phoneApp.events.count == reported, "nothing after the scan ended")
    }

    @Test func stopScanEndsTheScanAndItsTimer() throws {
        let home = try Home()
        try home.central.scanForPeripherals(withServices: nil,
                                            options: ScanOptions(allowDuplicates: true, duration: .seconds(10)))
        home.loop.advance(by: .seconds(1))
        #expect(!home.phoneApp.discoveries.isEmpty)
        home.central.stopScan()
        home.loop.run()
        #expect(home.phoneApp.scanStops == [.stopped])
        #expect(!home.central.isScanning && !home.phone.controller.isScanning)

        let discovered = home.phoneApp.discoveries.count
        home.loop.advance(by: .seconds(20))
        #expect(home.phoneApp.discoveries.count == discovered)
        #expect(home.phoneApp.scanStops == [.stopped], "the duration timer must not fire after stopScan")
        #expect(home.loop.pendingCount == 0)
    }

    @Test func anUnboundedScanIsRefused() throws {
        let home = try Home()
        #expect(throws: BluetoothError.self) {
            try home.central.scanForPeripherals(withServices: nil, options: ScanOptions(duration: .zero))
        }
        #expect(!home.phone.controller.isScanning)
    }
}
