@testable import LatchkeyHousehold
import LatchkeySim
import LatchkeyTransport
import Testing

/// The household's refusing radio: during a spell a request is refused, reported to the agent
/// and made again until it takes; after the spell it takes at the next try.
@Suite struct RefusingRadioTests {
    final class Listener: BluetoothTransportDelegate {
        var refusals: [TransportRefusal] = []
        var states: [RadioState] = []
        func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) { states.append(state) }
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

    /// A refusing radio over a device of a fresh air, with a listener attached.
    static func rig() -> (ManualEventLoop, SimulatedAir, SimulatedController, RefusingRadio, Listener) {
        let loop = ManualEventLoop()
        let air = SimulatedAir(loop: loop, seed: 1)
        let device = air.addDevice(address: BluetoothAddress(0xC0FFEE0000AA))
        let radio = RefusingRadio(device)
        let listener = Listener()
        radio.delegate = listener
        return (loop, air, device, radio, listener)
    }

    @Test func aScanIsRefusedAndMadeAgainAfterTheSpell() throws {
        let (loop, air, _, radio, listener) = Self.rig()
        defer { withExtendedLifetime(air) {} }
        radio.refuse(for: .seconds(3))
        try radio.startScanning(ScanParameters())
        loop.run()
        #expect(!radio.isScanning && listener.refusals.map(\.request) == [.scanning])
        loop.advance(by: .seconds(4))
        #expect(radio.isScanning)
        // Stopped during a spell: not started again.
        radio.stopScanning()
        radio.refuse(for: .seconds(3))
        try radio.startScanning(ScanParameters())
        radio.stopScanning()
        loop.advance(by: .seconds(10))
        #expect(!radio.isScanning)
    }

    @Test func aPowerOnDuringASpellIsRefusedOnce() throws {
        let (loop, air, device, radio, listener) = Self.rig()
        defer { withExtendedLifetime(air) {} }
        device.powerOff()
        loop.run()
        radio.refuse(for: .seconds(5))
        device.powerOn()
        loop.run()
        #expect(radio.state == .poweredOff, "the agent sees the radio off while its power is refused")
        #expect(listener.refusals.map(\.request) == [.power])
        loop.advance(by: .seconds(1))
        #expect(radio.state == .poweredOff)
        loop.advance(by: .seconds(1))
        #expect(radio.state == .poweredOn && listener.states.last == .poweredOn, "taken at the second try")
        // The rest of the spell refuses the agent's requests.
        let ad = Advertisement(data: AdvertisingData(serviceUUIDs: [], localName: "x"), interval: .milliseconds(100))
        try radio.startAdvertising(ad)
        loop.run()
        #expect(!radio.isAdvertising && listener.refusals.map(\.request) == [.power, .advertising])
        loop.advance(by: .seconds(4))
        #expect(radio.isAdvertising)
        // An agent that attaches during a spell has its power refused first too.
        radio.refuse(for: .seconds(3))
        let next = Listener()
        radio.delegate = next
        loop.run()
        #expect(radio.state == .poweredOff && next.refusals.map(\.request) == [.power])
        loop.advance(by: .seconds(2))
        #expect(radio.state == .poweredOn && next.states == [.poweredOn])
    }
}
