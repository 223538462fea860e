import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

/// What a central's per-link setup asks of the client (LatchkeyManagers'
/// Peripheral+LinkSetup.swift): to know when the application's requests have run out, to
/// hear Database Out Of Sync before the request it refused is reported, and to look up the
/// Generic Attribute service without asking for more than it needs.
@Suite("GATT client: what a link's setup needs")
struct GATTClientLinkSetupTests {
    @Test("a service a server has once is found with one Find By Type Value, not continued")
    func firstServiceOnly() throws {
        let done = Completion<Result<[DiscoveredService], GATTClientError>>()
        let script = ClientScript()
        try script.exchange(
            .start { $0.discoverPrimaryServices(.genericAttributeService, firstOnly: true, done.record) },
            .out([0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x01, 0x18]),
            .in([0x07, 0x01, 0x00, 0x08, 0x00, 0x20, 0x00, 0x24, 0x00]))
        #expect(done.value == .success([DiscoveredService(uuid: .genericAttributeService, startHandle: 1, endHandle: 8)]))
        #expect(script.client.nextOutgoing() == nil, "no request for the rest of the database")
    }

    @Test("characteristic discovery ends where the caller has enough; the ranges it knows are exact")
    func characteristicsUntilEnough() throws {
        let done = Completion<Result<[DiscoveredCharacteristic], GATTClientError>>()
        let service = DiscoveredService(uuid: .genericAttributeService, startHandle: 0x0001, endHandle: 0x0008)
        let script = ClientScript()
        try script.exchange(
            .start { $0.discoverCharacteristics(of: service, until: { $0.count >= 2 }, done.record) },
            .out([0x08, 0x01, 0x00, 0x08, 0x00, 0x03, 0x28]),
            // Service Changed (indicate) 0x0002→0x0003, Client Supported Features 0x0005→0x0006.
            .in([0x09, 0x07, 0x02, 0x00, 0x20, 0x03, 0x00, 0x05, 0x2A, 0x05, 0x00, 0x0A, 0x06, 0x00, 0x29, 0x2B]))
        guard case .success(let found)? = done.value else { Issue.record("\(done.calls)"); return }
        #expect(found.map(\.uuid) == [.serviceChanged, .clientSupportedFeatures])
        #expect(found.first?.endHandle == 0x0004, "Service Changed's range ends before the next declaration")
        #expect(script.client.nextOutgoing() == nil, "no Read By Type from 0x0006 on")
    }

    @Test("Database Out Of Sync is heard before the refused request's completion")
    func outOfSyncBeforeTheCompletion() throws {
        var order: [String] = []
        let script = ClientScript()
        script.client.onDatabaseOutOfSync = { order.append("out of sync") }
        try script.exchange(
            .start { $0.read(0x0009) { result in order.append("completion: \(result.failure.map { "\($0)" } ?? "ok")") } },
            .out([0x0A, 0x09, 0x00]),
            .in(errorRsp(0x0A, 0x0000, 0x12)))
        #expect(order == ["out of sync", "completion: ATT error \(ATTErrorCode.databaseOutOfSync) on handle 0x0"])

        order.removeAll()
        try script.exchange(.start { $0.read(0x0009) { _ in order.append("completion") } },
                            .out([0x0A, 0x09, 0x00]),
                            .in(errorRsp(0x0A, 0x0009, 0x0A)))
        #expect(order == ["completion"], "another error is not Out Of Sync")
    }

    @Test("idle is reported once the last request is answered, not while a completion queued another")
    func idleAfterTheLastRequest() throws {
        var idle = 0
        let script = ClientScript()
        script.client.onIdle = { idle += 1 }
        var idleBetween: Int?
        try script.exchange(
            .start { client in client.read(0x0003) { _ in client.read(0x0005) { _ in } } },
            .out([0x0A, 0x03, 0x00]),
            .in([0x0B, 0x01]),
            .trigger("look") { _ in idleBetween = idle },
            .out([0x0A, 0x05, 0x00]),
            .in([0x0B, 0x02]))
        #expect(idleBetween == 0, "the completion's read was queued")
        #expect(idle == 1 && script.client.isIdle)
    }
}

extension Result {
    fileprivate var failure: Failure? { if case .failure(let e) = self { e } else { nil } }
}
