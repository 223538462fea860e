import LatchkeyATT
import LatchkeyCentral
import LatchkeyGATT
import LatchkeyManagers
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport
import Testing

/// An app that sets up as soon as it can, the way `PhoneAgent` does: on each link it asks
/// only for what its proxy lacks, subscribes to the state and reads it once. It connects
/// again whenever its link is lost.
final class EagerApp: CentralManagerDelegate, PeripheralDelegate {
    private(set) var reads = 0
    private(set) var readErrors: [BluetoothError] = []
    private(set) var modified: [[BluetoothUUID]] = []
    /// Runs once the state subscription is confirmed, before the app's next request.
    var onSubscribed: (() -> Void)?

    func centralManagerDidUpdateState(_ central: CentralManager) {}
    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        peripheral.delegate = self
        next(peripheral)
    }
    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: BluetoothError?) {
        try? central.connect(peripheral)
    }

    private func next(_ p: Peripheral) {
        guard let s = p.service(TestGATT.service) else { return p.discoverServices([TestGATT.service]) }
        guard let state = s.characteristic(TestGATT.state) else { return p.discoverCharacteristics(nil, for: s) }
        if state.isNotifying { p.readValue(for: state) } else { p.setNotifyValue(true, for: state) }
    }

    func peripheral(_ p: Peripheral, didDiscoverServices error: BluetoothError?) { next(p) }
    func peripheral(_ p: Peripheral, didDiscoverCharacteristicsFor service: RemoteService, error: BluetoothError?) { next(p) }
    func peripheral(_ p: Peripheral, didUpdateNotificationStateFor characteristic: RemoteCharacteristic, error: BluetoothError?) {
        guard error == nil else { return }
        onSubscribed?()
        next(p)
    }
    func peripheral(_ p: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic, error: BluetoothError?) {
        if let error { readErrors.append(error) } else { reads += 1 }
    }
    func peripheral(_ p: Peripheral, didModifyServices invalidatedServices: [RemoteService]) {
        modified.append(invalidatedServices.map(\.uuid))
        if !invalidatedServices.isEmpty { next(p) }
    }
}

/// The order of a link's setup (Peripheral+LinkSetup.swift): only the Database Hash read
/// goes before the app's first request — on a first link as on a returning one — and the
/// Service Changed chores follow the app's last; a change of the lock's database in between
/// is still caught (Robust Caching's Database Out Of Sync) before the phone trusts its cache.
@Suite struct LinkSetupOrderTests {
    /// The Home's phone, run by an `EagerApp`, linked and set up, its requests counted.
    final class Eager {
        let home: Home
        let app = EagerApp()
        let central: CentralManager
        let sent = SentPDUs()
        let p: Peripheral

        init() throws {
            home = try Home()
            home.phone.controller.detachApplication()
            central = CentralManager(transport: home.phone.controller, delegate: app)
            central.trace = { [sent] _, direction, pdu in sent.record(direction, pdu) }
            home.loop.run()
            p = central.retrievePeripherals(withIdentifiers: [Addresses.lock])[0]
            try central.connect(p)
            guard home.loop.advance(until: { self.app.reads == 1 }, limit: .seconds(5)), home.linkSetUp() else {
                throw NotLinked()
            }
        }

        /// The requests the phone sent, decoded.
        var requests: [ATTPDU] {
            sent.all.compactMap { try? ATTPDU(decoding: $0[...]) }.filter { $0.opcode.isRequest }
        }

        /// Away until the link is lost, back until the app has read again and the chores are done.
        func returnHome() throws {
            home.air.setPosition(awayPosition, of: Addresses.phone)
            guard home.loop.advance(until: { self.p.state != .connected }, limit: .seconds(5)) else { throw NotLinked() }
            sent.reset()
            home.air.setPosition(1, of: Addresses.phone)
            let reads = app.reads
            guard home.loop.advance(until: { self.app.reads > reads }, limit: .seconds(5)), home.linkSetUp() else {
                throw NotLinked()
            }
        }
    }

    static let hashRead = ATTPDU.readByTypeRequest(start: 0x0001, end: 0xFFFF, type: .databaseHash)
    /// The Generic Attribute service every PeripheralManager publishes, behind the Generic
    /// Access service (0x0001–0x0005).
    static let genericAttribute: ClosedRange<UInt16> = 0x0006...0x000D
    /// The chores against it: Client Supported Features' value at 0x000B, Service Changed's
    /// CCCD at 0x0009.
    static let chores: [ATTPDU] = [.writeRequest(handle: 0x000B, value: [0x01]), .writeRequest(handle: 0x0009, value: [0x02, 0x00])]
    static let lookup: [ATTPDU] = [
        .findByTypeValueRequest(start: 0x0001, end: 0xFFFF, type: 0x2800, value: [0x01, 0x18]),
        .readByTypeRequest(start: 0x0006, end: 0x000D, type: .characteristic),
    ]

    /// A request that belongs to the manager's chores: anything aimed at the Generic Attribute service.
    static func isChore(_ pdu: ATTPDU) -> Bool {
        switch pdu {
        case .findByTypeValueRequest(_, _, 0x2800, let value): Array(value) == [0x01, 0x18]
        case .readByTypeRequest(let start, _, .characteristic): genericAttribute.contains(start)
        case .writeRequest(let handle, _): genericAttribute.contains(handle)
        default: false
        }
    }

    @Test func aFirstLinkSendsOnlyTheHashReadBeforeTheAppAndTheChoresAfterIt() throws {
        let e = try Eager()
        let requests = e.requests
        guard case .exchangeMTURequest = requests.first else { Issue.record("\(requests)"); return }
        #expect(requests.dropFirst().first == Self.hashRead, "the hash, read before the app discovers anything")
        let state = try #require(e.p.service(TestGATT.service)?.characteristic(TestGATT.state))
        let appEnd = try #require(requests.firstIndex(of: .readRequest(handle: state.valueHandle)))
        let app = requests[2...appEnd]
        #expect(!app.contains(where: Self.isChore), "nothing of the manager's between the app's requests: \(Array(app))")
        #expect(app.first == .findByTypeValueRequest(start: 0x0001, end: 0xFFFF, type: 0x2800,
                                                     value: TestGATT.service.littleEndianBytes[...]))
        #expect(Array(requests[(appEnd + 1)...]) == Self.lookup + Self.chores,
                "then Service Changed is found (one request each for the service and its characteristics) and enabled")
        #expect(e.p.databaseHash == e.home.lock.manager.database.hash, "the cache is stamped with the hash read first")
    }

    @Test func aReturningLinkSendsOnlyTheHashReadBeforeTheAppAndTheChoresAfterIt() throws {
        let e = try Eager()
        try e.returnHome()
        let state = try #require(e.p.service(TestGATT.service)?.characteristic(TestGATT.state))
        let cccd = try #require(state.clientConfigurationHandle)
        let requests = e.requests
        guard case .exchangeMTURequest = requests.first else { Issue.record("\(requests)"); return }
        #expect(Array(requests.dropFirst()) == [Self.hashRead,
                                                .writeRequest(handle: cccd, value: [0x01, 0x00]),
                                                .readRequest(handle: state.valueHandle)] + Self.chores,
                "the hash, then the app's subscription and read from its cache, then the chores")
        #expect(e.sent.discovery == 0)
        #expect(e.app.modified.isEmpty)
    }

    @Test func aChangeBeforeTheChoresIsCaughtByRobustCachingAndTheCacheGoes() throws {
        let e = try Eager()
        let extra = GATTService(uuid: TestGATT.uuid(0x7E57_00F0), characteristics: [
            GATTCharacteristic(uuid: TestGATT.uuid(0x7E57_00F1), properties: [.read], permissions: .read, value: [0x0F]),
        ])
        var changed = false
        e.app.onSubscribed = {  // on the returning link, after the hash read, before the chores
            guard !changed else { return }
            changed = true
            _ = try? e.home.lock.manager.add(extra)
        }
        try e.returnHome()
        e.home.settle()
        #expect(changed)
        let requests = e.requests
        let refused = try #require(requests.firstIndex(of: Self.chores[1]), "Service Changed's CCCD write")
        #expect(requests[refused - 1] == Self.chores[0])
        #expect(requests[refused + 1] == Self.hashRead, "refused with Database Out Of Sync: the hash is read at once")
        #expect(e.app.modified == [[TestGATT.service]], "nothing says where it changed: the whole cache goes")
        #expect(Array(requests.suffix(Self.lookup.count + Self.chores.count)) == Self.lookup + Self.chores,
                "and after the app's rediscovery, Service Changed is found and enabled again")
        #expect(e.home.lock.manager.centrals.first?.wantsServiceChanged == true)
        #expect(e.p.databaseHash == e.home.lock.manager.database.hash)
        #expect(e.p.service(TestGATT.service)?.characteristic(TestGATT.state)?.isNotifying == true, "subscribed again")
    }

    @Test func onALinkWithServiceChangedOnTheIndicationAloneSaysWhatChanged() throws {
        let e = try Eager()
        let service = try #require(e.p.service(TestGATT.service))
        let state = try #require(service.characteristic(TestGATT.state))
        let extra = GATTService(uuid: TestGATT.uuid(0x7E57_00F0), characteristics: [
            GATTCharacteristic(uuid: TestGATT.uuid(0x7E57_00F1), properties: [.read], permissions: .read, value: [0x0F]),
        ])
        // The read crosses the indication: the lock refuses it (its confirmation is not in yet).
        _ = try e.home.lock.manager.add(extra)
        e.p.readValue(for: state)
        e.home.settle()
        #expect(e.app.readErrors == [.att(.databaseOutOfSync)])
        #expect(e.app.modified == [[]], "told of the new range, which held nothing cached")
        #expect(e.p.service(TestGATT.service) === service && !service.isInvalidated)
    }
}
