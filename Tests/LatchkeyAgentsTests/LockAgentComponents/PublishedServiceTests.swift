import LatchkeyAgents
import LatchkeyEvents
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTransport
import Testing

/// `PublishedService` on its own, on a simulated controller: the service is published once the
/// radio is on and advertised while a link is free, a radio that went off and came back is a
/// power cycle, and a stop withdraws both.
@Suite struct PublishedServiceTests {
    let loop = ManualEventLoop()
    let radio: SimulatedController
    let peripheral: PeripheralManager
    private let seen = Seen()

    init() {
        let air = SimulatedAir(loop: loop, seed: 7)
        radio = air.addDevice(address: BluetoothAddress(0xA0_00_00_00_00_01, kind: .random))
        peripheral = PeripheralManager(transport: radio)
        loop.run()
    }

    func service(maximumLinks: Int = 4) -> PublishedService {
        let seen = seen
        return PublishedService(peripheral: peripheral, definition: LockServiceDefinition.service, name: "Front door",
                                interval: .milliseconds(100), maximumLinks: maximumLinks, beacon: { seen.beacon },
                                powerCycled: { seen.powerCycles += 1 }, emit: { seen.events.append($0.name) })
    }

    @Test func theRadioOnPublishesTheServiceAndAdvertisesItsNameAndUUID() throws {
        let published = service()
        #expect(!published.isPublished)
        published.radioChanged()
        #expect(published.isPublished)
        let advertised = try #require(peripheral.advertisement)
        #expect(advertised.data.localName == "Front door")
        #expect(advertised.data.serviceUUIDs == [LockServiceUUID.service])
        #expect(advertised.scanResponse == nil)
        #expect(seen.powerCycles == 0, "the first power-on is a start, not a power cycle")
    }

    @Test func aRadioThatWentOffAndCameBackIsAPowerCycleOnce() {
        let published = service()
        published.radioChanged()
        radio.powerOff()
        loop.run()
        published.radioChanged()
        #expect(seen.powerCycles == 0)
        radio.powerOn()
        loop.run()
        published.radioChanged()
        #expect(seen.powerCycles == 1)
        published.radioChanged()
        #expect(seen.powerCycles == 1, "an update without an outage is no power cycle")
    }

    @Test func thePairingBeaconGoesInTheScanResponseWhenAdvertisingRestarts() throws {
        let published = service()
        published.radioChanged()
        seen.beacon = AdvertisingData(localName: "pairing")
        published.advertise()
        #expect(try #require(peripheral.advertisement).scanResponse == seen.beacon)
    }

    @Test func itNeverAdvertisesWithEveryLinkTaken() {
        let published = service(maximumLinks: 0)
        published.radioChanged()
        #expect(published.isPublished)
        #expect(peripheral.advertisement == nil)
        published.advertiseWhileLinksAreFree()
        #expect(peripheral.advertisement == nil)
        #expect(seen.events.isEmpty)
    }

    @Test func aStopWithdrawsTheServiceAndTheAdvertising() {
        let published = service()
        published.radioChanged()
        published.withdraw()
        #expect(!published.isPublished)
        #expect(peripheral.advertisement == nil)
        published.advertise()
        #expect(peripheral.advertisement == nil, "nothing to advertise without the service")
    }

    @Test func aRestoredServiceOfThisDefinitionIsKept() throws {
        let published = service()
        let restored = try peripheral.add(LockServiceDefinition.service)
        published.restore(restored)
        #expect(published.isPublished)
        #expect(peripheral.services.count == 1, "the same definition is not published twice")
    }
}

private final class Seen {
    var beacon: AdvertisingData?
    var powerCycles = 0
    var events: [String] = []
}
