import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("GATT client: Service Changed values and reading by UUID")
struct GATTClientServiceChangedTests {
    typealias ReadByUUIDResult = Result<[(handle: UInt16, value: [UInt8])], GATTClientError>

    @Test("an indication's confirmation goes out before any request its handler starts")
    func confirmationFirst() throws {
        let client = GATTClient()
        client.onValue = { _, _, _ in client.read(0x0009) { _ in } }
        client.receive([0x1D, 0x03, 0x00, 0x09, 0x00, 0x0D, 0x00][...])
        // A server with Robust Caching would refuse the read from a client that had not
        // confirmed yet (Vol 3 Part G 2.5.2.1).
        #expect(client.nextOutgoing() == [0x1E])
        #expect(client.nextOutgoing() == [0x0A, 0x09, 0x00])
    }

    @Test("Read Using Characteristic UUID: the values the server has, none when it has none")
    func readByUUID() throws {
        let found = Completion<ReadByUUIDResult>(), none = Completion<ReadByUUIDResult>()
        let script = ClientScript()
        try script.exchange(
            .start { $0.read(using: .databaseHash, found.record) },
            .out([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B]),
            .in([0x09, 0x04, 0x08, 0x00, 0xAB, 0xCD]),
            .start { $0.read(using: .databaseHash, none.record) },
            .out([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B]),
            .in(errorRsp(0x08, 0x0001, 0x0A)))
        guard case .success(let values)? = found.value, case .success(let nothing)? = none.value else {
            Issue.record("reads failed: \(found.calls) \(none.calls)"); return
        }
        #expect(values.map(\.handle) == [0x0008] && values.map(\.value) == [[0xAB, 0xCD]])
        #expect(nothing.isEmpty)
    }

    @Test("a value outside the range read is an invalid response")
    func readByUUIDOutOfRange() throws {
        let done = Completion<ReadByUUIDResult>()
        let script = ClientScript()
        try script.exchange(
            .start { $0.read(using: .databaseHash, in: 0x0001...0x0008, done.record) },
            .out([0x08, 0x01, 0x00, 0x08, 0x00, 0x2A, 0x2B]),
            .in([0x09, 0x04, 0x09, 0x00, 0xAB, 0xCD]))
        guard case .failure(.invalidResponse)? = done.value else { Issue.record("\(done.calls)"); return }
    }

    @Test("a Service Changed value is a handle range: four octets, start at least 1, start ≤ end")
    func serviceChangedValue() {
        #expect(ServiceChangedRange(value: [0x09, 0x00, 0x0D, 0x00])?.range == 9...13)
        #expect(ServiceChangedRange(value: [0x01, 0x00, 0xFF, 0xFF])?.range == 1...0xFFFF)
        #expect(ServiceChangedRange(9...13).bytes == [0x09, 0x00, 0x0D, 0x00])
        for bad: [UInt8] in [[], [0x09, 0x00, 0x0D], [0x09, 0x00, 0x0D, 0x00, 0x00], [0x00, 0x00, 0x05, 0x00],
                             [0x0D, 0x00, 0x09, 0x00]] {
            #expect(ServiceChangedRange(value: bad) == nil, "\(bad)")
        }
    }
}
