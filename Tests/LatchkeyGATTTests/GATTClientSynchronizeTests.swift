import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("GATT client: the barrier after adopting a bearer another process used")
struct GATTClientSynchronizeTests {
    typealias ReadResult = Result<[UInt8], GATTClientError>

    @Test("answers meant for the dead process are dropped; the read behind the barrier gets its own")
    func staleAnswersAreDropped() throws {
        let synced = Completion<Result<Void, GATTClientError>>(), read = Completion<ReadResult>()
        let script = ClientScript()
        try script.exchange(
            .start { $0.synchronize(nonce: 0x1234, synced.record) },
            .start { $0.read(0x0003, read.record) },
            // Find Information, start 0x1234, end 0x1233: a range no server accepts.
            .out([0x04, 0x34, 0x12, 0x33, 0x12]),
            // The previous process's read is answered first, then its own barrier's error:
            .in([0x0B, 0xEE, 0xEE]),
            .in([0x01, 0x04, 0x99, 0x00, 0x01]),
            .in([0x01, 0x0A, 0x03, 0x00, 0x01]))
        #expect(!synced.wasCalled, "none of those was the barrier's answer")
        #expect(!read.wasCalled)
        try script.exchange(
            .in([0x01, 0x04, 0x34, 0x12, 0x01]),  // Invalid Handle for 0x1234: ours
            .out([0x0A, 0x03, 0x00]),
            .in([0x0B, 0x07]))
        #expect(synced.calls.count == 1 && synced.failure() == Optional<GATTClientError>.none)
        #expect(read.value == .success([0x07]))
    }

    @Test("a server refuses the barrier's range with Invalid Handle naming its start")
    func theServerAnswersTheBarrier() throws {
        let server = GATTServer(database: GATTDatabase())
        let answer = try #require(server.respond(to: ATTPDU.findInformationRequest(start: 0x1234, end: 0x1233).bytes[...]))
        #expect(answer == .errorResponse(request: .findInformationRequest, handle: 0x1234, error: .invalidHandle))
    }
}
