import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("GATT client: one request at a time, timeouts, disconnects, server-initiated values")
struct GATTClientLifecycleTests {
    typealias ReadResult = Result<[UInt8], GATTClientError>

    @Test("procedures queue: the next request goes out only after the previous response (3.3.2)")
    func oneRequestAtATime() throws {
        let first = Completion<ReadResult>(), second = Completion<ReadResult>()
        let script = ClientScript()
        try script.exchange(
            .start { $0.read(0x0003, first.record) },
            .start { $0.read(0x0005, second.record) },
            .out([0x0A, 0x03, 0x00]))
        #expect(script.client.isAwaitingResponse)
        #expect(!second.wasCalled)
        try script.exchange(.in([0x0B, 0x01]), .out([0x0A, 0x05, 0x00]), .in([0x0B, 0x02]))
        #expect(first.value == .success([0x01]))
        #expect(second.value == .success([0x02]))
        #expect(!script.client.isAwaitingResponse)
    }

    @Test("a completion may start the next procedure")
    func completionStartsNext() throws {
        let second = Completion<ReadResult>()
        let script = ClientScript()
        try script.exchange(
            .start { client in client.read(0x0003) { _ in client.read(0x0005, second.record) } },
            .out([0x0A, 0x03, 0x00]), .in([0x0B, 0x01]),
            .out([0x0A, 0x05, 0x00]), .in([0x0B, 0x02]))
        #expect(second.value == .success([0x02]))
    }

    @Test("the transaction timeout fails the outstanding and queued procedures, and every later one")
    func transactionTimeout() throws {
        let outstanding = Completion<ReadResult>(), queued = Completion<ReadResult>()
        let later = Completion<ReadResult>(), laterWrite = Completion<Result<Void, GATTClientError>>()
        let script = ClientScript()
        try script.exchange(
            .start { $0.read(0x0003, outstanding.record) },
            .start { $0.read(0x0005, queued.record) },
            .out([0x0A, 0x03, 0x00]),
            .trigger { $0.client.transactionTimedOut() })
        #expect(outstanding.value == .failure(.timeout))
        #expect(queued.value == .failure(.timeout))
        #expect(script.client.isDead)
        #expect(!script.client.isAwaitingResponse)
        // 3.3.3: no further requests on this bearer. A late response changes nothing.
        try script.exchange(
            .start { $0.read(0x0007, later.record) },
            .start { $0.write([1], to: 0x0007, laterWrite.record) },
            .trigger { try $0.client.writeWithoutResponse([1], to: 0x0007) },
            .in([0x0B, 0x01]))
        #expect(later.value == .failure(.timeout))
        #expect(laterWrite.failure() == GATTClientError.timeout)
        #expect(outstanding.calls.count == 1)
    }

    @Test("a disconnect fails everything with .disconnected, and later submissions too")
    func disconnect() throws {
        let outstanding = Completion<ReadResult>(), queued = Completion<Result<[DiscoveredService], GATTClientError>>()
        let later = Completion<Result<Int, GATTClientError>>()
        let script = ClientScript()
        try script.exchange(
            .start { $0.read(0x0003, outstanding.record) },
            .start { $0.discoverPrimaryServices(nil, queued.record) },
            .out([0x0A, 0x03, 0x00]),
            .trigger { $0.client.disconnected() },
            .start { $0.exchangeMTU(later.record) })
        #expect(outstanding.value == .failure(.disconnected))
        #expect(queued.value == .failure(.disconnected))
        #expect(later.value == .failure(.disconnected))
    }

    @Test("a PDU still in the outbox at timeout is not sent afterwards")
    func timeoutClearsOutbox() throws {
        let done = Completion<ReadResult>()
        let script = ClientScript()
        script.client.read(0x0003, done.record)
        #expect(script.client.hasOutgoing)
        script.client.transactionTimedOut()
        #expect(!script.client.hasOutgoing)
        #expect(done.value == .failure(.timeout))
    }

    @Test("GAI/CL/BV-01-C an indication is delivered and confirmed automatically")
    func indicationConfirmed() throws {
        let script = ClientScript()
        try script.exchange(.in([0x1D, 0x22, 0x00, 0x01]), .out([0x1E]))
        #expect(script.endpoint.values.count == 1)
        #expect(script.endpoint.values.first?.handle == 0x0022)
        #expect(script.endpoint.values.first?.value == [0x01])
        #expect(script.endpoint.values.first?.indication == true)
    }

    @Test("an indication arriving while a request is outstanding is confirmed at once")
    func indicationDuringRequest() throws {
        let done = Completion<ReadResult>()
        let script = ClientScript()
        try script.exchange(
            .start { $0.read(0x0003, done.record) },
            .out([0x0A, 0x03, 0x00]),
            .in([0x1D, 0x22, 0x00, 0x00]),
            .out([0x1E]),
            .in([0x0B, 0x07]))
        #expect(done.value == .success([0x07]))
    }

    @Test("GAN/CL/BV-01-C a notification is delivered and answers nothing")
    func notification() throws {
        let script = ClientScript()
        try script.exchange(.in([0x1B, 0x03, 0x00, 0x01, 0x02, 0x03]))
        #expect(script.endpoint.values.first?.value == [0x01, 0x02, 0x03])
        #expect(script.endpoint.values.first?.indication == false)
    }

    @Test("an unsolicited response is ignored; client-to-server PDUs are not the client's")
    func unsolicited() throws {
        let script = ClientScript()
        try script.exchange(.in([0x0B, 0x01]), .in([0x13]))
        #expect(script.client.receive([0x13][...]))
        #expect(!script.client.receive([0x0A, 0x03, 0x00][...]))
        #expect(!script.client.receive([0x52, 0x03, 0x00][...]))
        #expect(!script.client.receive([0x1B][...]))  // malformed notification
    }
}
