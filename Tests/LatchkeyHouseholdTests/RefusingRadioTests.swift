@testable import LatchkeyHousehold
import LatchkeySim
import LatchkeyTransport
import Testing

/// The household's refusing radio: during a spell a request is refused, reported to the agent
/// and made again until it takes; after the spell it takes at the next try.
@Suite struct RefusingRadioTests {
    final class Listener: BluetoothTransportDelegate {
        var refusals: [TransportRefusal] = []
        func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) {}
        func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {}
        func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {}
        func transport(_ transport: any BluetoothTransport, didRefuse refusal: TransportRefusal) { refusals.append(refusal) }
    }

    @Test func aRefusedWishIsReportedAndTakenAfterTheSpell() throws {
        let loop = ManualEventLoop()
        let air = SimulatedAir(loop: loop, seed: 1)
        let radio = RefusingRadio(air.addDevice(address: BluetoothAddress(0xC0FFEE0000AA)))
        let listener = Listener()
        radio.delegate = listener
        radio.refuse(for: .seconds(5))
        let ad = Advertisement(data: AdvertisingData(serviceUUIDs: [], localName: "x"), interval: .milliseconds(100))
        try radio.startAdvertising(ad)
        try radio.addPendingConnection(to: BluetoothAddress(0xC0FFEE0000BB))
        loop.run()
        #expect(!radio.isAdvertising && radio.pendingConnections.isEmpty)
        #expect(listener.refusals.map(\.attempt) == [1, 1])
        loop.advance(by: .seconds(4))
        #expect(!radio.isAdvertising, "still refused, asked again every two seconds")
        #expect(listener.refusals.count == 6 && listener.refusals.last?.attempt == 3)
        loop.advance(by: .seconds(2))
        #expect(radio.isAdvertising && radio.pendingConnections == [BluetoothAddress(0xC0FFEE0000BB)])
        // A wish withdrawn during a spell is not made again.
        radio.refuse(for: .seconds(3))
        radio.stopAdvertising()
        try radio.startAdvertising(ad)
        radio.stopAdvertising()
        loop.advance(by: .seconds(10))
        #expect(!radio.isAdvertising)
    }
}
