import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTransport
import Testing

/// A service with one indicating characteristic (the test lock's service only notifies).
private enum IndicatedGATT {
    static let service = TestGATT.uuid(0x7E57_0101)
    static let alarm = TestGATT.uuid(0x7E57_0102)
    static var definition: GATTService {
        GATTService(uuid: service, characteristics: [
            GATTCharacteristic(uuid: alarm, properties: [.read, .indicate], permissions: .read),
        ])
    }
}

/// A central that talks raw ATT on the simulated link and answers indications only when
/// told to, as a phone whose Bluetooth stack has hung would not.
private final class RawCentral: BluetoothTransportDelegate, ATTLinkDelegate {
    let controller: SimulatedController
    var confirmsIndications = false
    private(set) var link: (any ATTLink)?
    private(set) var received: [[UInt8]] = []
    private(set) var disconnects: [DisconnectReason] = []

    init(air: SimulatedAir, position: Double) {
        controller = air.addDevice(address: Addresses.phone, position: position)
        controller.delegate = self
    }

    var indications: Int { received.count { $0.first == ATTOpcode.handleValueIndication.rawValue } }

    func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) {}
    func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {}
    func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        link.delegate = self
        self.link = link
    }

    func link(_ link: any ATTLink, didReceive pdu: [UInt8]) {
        received.append(pdu)
        if confirmsIndications, pdu.first == ATTOpcode.handleValueIndication.rawValue {
            #expect(link.send(ATTPDU.handleValueConfirmation.bytes) == .sent)
        }
    }

    func linkIsWritable(_ link: any ATTLink) {}
    func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason) { disconnects.append(reason) }
}

/// A lock with the indicating service and a raw central subscribed to its indications.
private final class IndicatingLink {
    let loop = ManualEventLoop()
    let air: SimulatedAir
    let app: LockApp
    let manager: PeripheralManager
    let alarm: LocalCharacteristic
    let central: RawCentral
    /// When each indication left the lock.
    let sent: Box<[Instant]> = Box([])

    init() throws {
        air = SimulatedAir(loop: loop)
        app = LockApp(loop: loop)
        manager = PeripheralManager(transport: air.addDevice(address: Addresses.lock, position: 0), delegate: app)
        let service = try manager.add(IndicatedGATT.definition)
        alarm = try #require(service.characteristic(IndicatedGATT.alarm))
        manager.startAdvertising(Advertisement(data: AdvertisingData(serviceUUIDs: [IndicatedGATT.service]),
                                               interval: Timing.fastAdvertisingInterval))
        central = RawCentral(air: air, position: 1)
        loop.run()
        let (loop, sent, central, app) = (loop, sent, central, app)
        manager.trace = { _, direction, pdu in
            if direction == "tx", pdu.first == ATTOpcode.handleValueIndication.rawValue { sent.value.append(loop.now) }
        }

        try central.controller.addPendingConnection(to: Addresses.lock)
        #expect(loop.advance(until: { central.link != nil }, limit: .seconds(1)))
        let cccd = try #require(service.handles.clientConfigurations[0])
        let subscribe = ATTPDU.writeRequest(handle: cccd, value: [0x02, 0x00]).bytes  // indicate
        #expect(central.link?.send(subscribe) == .sent)
        #expect(loop.advance(until: { app.events.contains(.subscribed(Addresses.phone, IndicatedGATT.alarm)) },
                             limit: .seconds(1)))
    }

    /// Sends an indication and waits until it has reached the central.
    func indicate(_ value: UInt8) -> Bool {
        let central = central
        let before = central.indications
        guard manager.updateValue([value], for: alarm) else { return false }
        return loop.advance(until: { central.indications > before }, limit: .seconds(1))
    }
}

private final class Box<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}

@Suite struct IndicationTimeoutTests {
    @Test func anUnconfirmedIndicationEndsTheBearerAtExactlyThirtySeconds() throws {
        let home = try IndicatingLink()
        #expect(home.indicate(1))
        let sent = try #require(home.sent.value.first)
        #expect(!home.manager.updateValue([2], for: home.alarm), "one indication at a time (3.4.7.2)")

        // An indication and its confirmation are a transaction: 30 s (Core Vol 3 Part F 3.3.3).
        home.loop.advance(to: sent + ATTLimits.transactionTimeout - .milliseconds(1))
        #expect(home.central.link?.isConnected == true)
        #expect(home.app.disconnects.isEmpty, "nothing at 29.999 s")

        home.loop.advance(by: .milliseconds(1))
        // No more ATT PDUs on this bearer: the lock drops the link at its next connection event.
        #expect(home.loop.advance(until: { !home.app.disconnects.isEmpty }, limit: Timing.connection.connectionInterval))
        #expect(home.app.disconnects == [.localHostTerminated])
        #expect(home.central.disconnects == [.remoteUserTerminated])
        #expect(home.central.indications == 1, "the refused second value never left")
    }

    @Test func confirmedIndicationsKeepTheBearerAndEachNewOneGetsAFreshThirtySeconds() throws {
        let home = try IndicatingLink()
        home.central.confirmsIndications = true
        #expect(home.indicate(1))
        home.loop.advance(by: .seconds(25))
        #expect(home.indicate(2), "the first was confirmed, so the next may go")
        home.loop.advance(by: .seconds(25))
        #expect(home.central.link?.isConnected == true, "50 s after the first, 25 s after the second, both confirmed")

        // The third is not confirmed: its own 30 s, not the first one's, ends the bearer.
        home.central.confirmsIndications = false
        #expect(home.indicate(3))
        let third = try #require(home.sent.value.last)
        home.loop.advance(to: third + ATTLimits.transactionTimeout - .milliseconds(1))
        #expect(home.app.disconnects.isEmpty)
        #expect(home.loop.advance(until: { !home.app.disconnects.isEmpty },
                                  limit: .milliseconds(1) + Timing.connection.connectionInterval))
        #expect(home.central.indications == 3)
    }
}
