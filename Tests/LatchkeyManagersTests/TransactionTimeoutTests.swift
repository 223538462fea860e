import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
import LatchkeySim
import LatchkeyTransport
import Testing

/// A lock whose application hangs on reads: a real GATT server answers everything else
/// (MTU exchange, discovery, writes), but Read Requests are taken off the link and never
/// answered, as when a peripheral's app never responds to a read. The peripheral manager
/// cannot do this by design (its delegate returns the answer), so this lock talks ATT on
/// the raw simulated link.
final class HungLock: BluetoothTransportDelegate, ATTLinkDelegate {
    let controller: SimulatedController
    let server: GATTServer
    private(set) var link: (any ATTLink)?
    private(set) var swallowed: [[UInt8]] = []
    private(set) var disconnects: [DisconnectReason] = []

    init(air: SimulatedAir, address: BluetoothAddress, position: Double) throws {
        controller = air.addDevice(address: address, position: position)
        let database = GATTDatabase()
        try database.add(TestGATT.definition)
        server = GATTServer(database: database, preferredMTU: SimulatedLink.defaultMaximumTransmissionUnit)
        controller.delegate = self
        try controller.startAdvertising(Advertisement(data: AdvertisingData(serviceUUIDs: [TestGATT.service]),
                                                      interval: Timing.fastAdvertisingInterval))
    }

    func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) {}
    func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {}
    func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        link.delegate = self
        self.link = link
    }

    func link(_ link: any ATTLink, didReceive pdu: [UInt8]) {
        if pdu.first == ATTOpcode.readRequest.rawValue {
            swallowed.append(pdu)
            return
        }
        if let response = server.handle(pdu[...]) { #expect(link.send(response) == .sent) }
    }

    func linkIsWritable(_ link: any ATTLink) {}
    func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason) { disconnects.append(reason) }
}

@Suite struct TransactionTimeoutTests {
    @Test func anUnansweredReadFailsAtExactlyThirtySecondsAndTheLinkIsDropped() throws {
        let loop = ManualEventLoop()
        let air = SimulatedAir(loop: loop)
        let lock = try HungLock(air: air, address: Addresses.lock, position: 0)
        let phone = Phone(air: air, loop: loop, position: 1)
        let p = phone.peripheral(Addresses.lock)
        try phone.manager.connect(p)
        #expect(loop.advance(until: { phone.app.events.contains(.mtu(SimulatedLink.defaultMaximumTransmissionUnit)) },
                             limit: .seconds(5)), "the hung lock still answers the MTU exchange")
        p.discoverServices()
        #expect(loop.advance(until: { p.services != nil }, limit: .seconds(5)))
        let service = try #require(p.service(TestGATT.service))
        p.discoverCharacteristics(for: service)
        #expect(loop.advance(until: { service.characteristics != nil }, limit: .seconds(5)))

        let asked = loop.now
        p.readValue(for: try service.at(TestGATT.state))
        let before = phone.app.events.count

        // ATT transaction timeout: 30 s (Core Vol 3 Part F 3.3.3).
        loop.advance(to: asked + ATTLimits.transactionTimeout - .milliseconds(1))
        #expect(lock.swallowed.count == 1, "the request crossed the link and was swallowed")
        #expect(phone.app.events.count == before, "nothing at 29.999 s")
        #expect(p.state == .connected)

        loop.advance(by: .milliseconds(1))
        #expect(phone.app.events.last == .value(TestGATT.state, nil, .transactionTimeout))
        #expect(phone.app.times { $0 == .value(TestGATT.state, nil, .transactionTimeout) } == [asked + .seconds(30)])

        // 3.3.3: no further ATT PDU on this bearer; the link goes at the next connection event.
        #expect(loop.advance(until: { !phone.app.disconnects.isEmpty }, limit: .seconds(1)))
        #expect(loop.now - (asked + .seconds(30)) <= Timing.connection.connectionInterval)
        #expect(phone.app.disconnects.map(\.1) == [.disconnected(.localHostTerminated)])
        #expect(lock.disconnects == [.remoteUserTerminated])
        #expect(p.state == .disconnected)
        #expect(lock.link?.isConnected == false)
        #expect(phone.controller.connectedLinks.isEmpty)
    }

    @Test func theThirtySecondsRunFromWhenTheRequestLeavesEvenWithCommandsQueuedAroundIt() throws {
        let loop = ManualEventLoop()
        let air = SimulatedAir(loop: loop)
        let lock = try HungLock(air: air, address: Addresses.lock, position: 0)
        let phone = Phone(air: air, loop: loop, position: 1)
        var requestSent: [Instant] = []
        phone.manager.trace = { _, direction, pdu in
            if direction == "tx", pdu.first == ATTOpcode.readRequest.rawValue { requestSent.append(loop.now) }
        }
        let p = phone.peripheral(Addresses.lock)
        try phone.manager.connect(p)
        #expect(loop.advance(until: { phone.app.events.contains(.mtu(SimulatedLink.defaultMaximumTransmissionUnit)) },
                             limit: .seconds(5)))
        p.discoverServices()
        #expect(loop.advance(until: { p.services != nil }, limit: .seconds(5)))
        let service = try #require(p.service(TestGATT.service))
        p.discoverCharacteristics(for: service)
        #expect(loop.advance(until: { service.characteristics != nil }, limit: .seconds(5)))
        let control = try service.at(TestGATT.control)

        // Write Commands fill the link; the read waits behind them and more wait behind it,
        // so the request leaves in the middle of a flush, with output still queued.
        let burst = 2 * SimulatedLink.defaultTransmitCapacity
        for i in 0..<burst { p.writeValue([UInt8(i)], for: control, withResponse: false) }
        p.readValue(for: try service.at(TestGATT.state))
        for i in 0..<burst { p.writeValue([UInt8(i)], for: control, withResponse: false) }
        #expect(loop.advance(until: { !requestSent.isEmpty }, limit: .seconds(1)))
        let sent = try #require(requestSent.first)

        // 3.3.3: the transaction starts when the request is sent.
        loop.advance(to: sent + ATTLimits.transactionTimeout - .milliseconds(1))
        #expect(lock.swallowed.count == 1)
        #expect(!phone.app.events.contains(.value(TestGATT.state, nil, .transactionTimeout)))
        loop.advance(by: .milliseconds(1))
        #expect(phone.app.times { $0 == .value(TestGATT.state, nil, .transactionTimeout) }
            == [sent + ATTLimits.transactionTimeout])
    }

    @Test func aRequestAnsweredJustInTimeDoesNotTimeOutAndTheNextGetsAFreshThirtySeconds() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        let state = try s.at(TestGATT.state)
        // A run of requests, each answered within a connection event or two: the 30 s is per
        // transaction, so a minute of back-to-back reads must not time out.
        var reads = 0
        let start = home.loop.now
        while home.loop.now - start < .seconds(60) {
            p.readValue(for: state)
            home.loop.advance(by: .milliseconds(200))
            reads += 1
        }
        home.settle()
        #expect(home.phoneApp.values(of: TestGATT.state).count == reads)
        #expect(!home.phoneApp.events.contains { if case .value(_, _, .some) = $0 { true } else { false } })
        #expect(p.state == .connected)
        home.loop.advance(by: .seconds(60))
        #expect(p.state == .connected, "an idle bearer with nothing outstanding never times out")
        #expect(home.loop.pendingCount == 0)
    }
}
