import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("GATT client: reads and writes")
struct GATTClientReadWriteTests {
    typealias ReadResult = Result<[UInt8], GATTClientError>
    typealias WriteResult = Result<Void, GATTClientError>

    @Test("GAR/CL/BV-01-C read characteristic value")
    func read() throws {
        let done = Completion<ReadResult>()
        try ClientScript().exchange(
            .start { $0.read(0x0003, done.record) },
            .out([0x0A, 0x03, 0x00]),
            .in([0x0B, 0x01, 0x02, 0x03]))
        #expect(done.value == .success([0x01, 0x02, 0x03]))
    }

    @Test("GAR/CL/BV-04-C read a long value: Read Blob while responses come back full")
    func readLong() throws {
        let done = Completion<ReadResult>()
        let value = (0..<49).map { UInt8($0) }
        try ClientScript().exchange(
            .start { $0.read(0x0003, done.record) },
            .out([0x0A, 0x03, 0x00]),
            .in([0x0B] + value[0..<22]),
            .out([0x0C, 0x03, 0x00, 0x16, 0x00]),
            .in([0x0D] + value[22..<44]),
            .out([0x0C, 0x03, 0x00, 0x2C, 0x00]),
            .in([0x0D] + value[44...]))
        #expect(done.value == .success(value))
    }

    @Test("a long value ending on a PDU boundary ends with an empty part or Attribute Not Long")
    func readLongOnBoundary() throws {
        let value = [UInt8](repeating: 0x5A, count: 22)
        let empty = Completion<ReadResult>()
        try ClientScript().exchange(
            .start { $0.read(0x0003, empty.record) },
            .out([0x0A, 0x03, 0x00]), .in([0x0B] + value),
            .out([0x0C, 0x03, 0x00, 0x16, 0x00]), .in([0x0D]))
        #expect(empty.value == .success(value))
        let notLong = Completion<ReadResult>()
        try ClientScript().exchange(
            .start { $0.read(0x0003, notLong.record) },
            .out([0x0A, 0x03, 0x00]), .in([0x0B] + value),
            .out([0x0C, 0x03, 0x00, 0x16, 0x00]), .in(errorRsp(0x0C, 0x0003, 0x0B)))
        #expect(notLong.value == .success(value))
    }

    @Test("a long read asks for no more once it holds 512 octets, the longest an attribute can be")
    func readLongStopsAt512() throws {
        let done = Completion<ReadResult>()
        let full = [UInt8](repeating: 1, count: 22)
        var steps: [ClientStep] = [.start { $0.read(0x0003, done.record) }, .out([0x0A, 0x03, 0x00]), .in([0x0B] + full)]
        for offset in stride(from: 22, to: 512, by: 22) {
            steps += [.out([0x0C, 0x03, 0x00] + UInt16(offset).le), .in([0x0D] + full)]
        }
        try ClientScript().exchange(steps)  // and no request after the 24th full part
        #expect(try #require(done.value).get().count == 24 * 22)
    }

    @Test("GAR/CL/BI-02-C, BI-03-C, BI-04-C, BI-05-C error responses map to .att(code, handle)",
          arguments: [(UInt8(0x02), ATTErrorCode.readNotPermitted), (0x08, .insufficientAuthorization),
                      (0x05, .insufficientAuthentication), (0x0C, .insufficientEncryptionKeySize),
                      (0x0F, .insufficientEncryption), (0x80, .application(0x80))])
    func readErrors(_ code: UInt8, _ expected: ATTErrorCode) throws {
        let done = Completion<ReadResult>()
        try ClientScript().exchange(
            .start { $0.read(0x0003, done.record) },
            .out([0x0A, 0x03, 0x00]),
            .in(errorRsp(0x0A, 0x0003, code)))
        #expect(done.value == .failure(.att(expected, handle: 0x0003)))
    }

    @Test("GAR/CL/BI-01-C read of an invalid handle reports the server's handle")
    func readInvalidHandle() throws {
        let done = Completion<ReadResult>()
        try ClientScript().exchange(.start { $0.read(0x0000, done.record) },
                                    .out([0x0A, 0x00, 0x00]), .in(errorRsp(0x0A, 0x0000, 0x01)))
        #expect(done.value == .failure(.att(.invalidHandle, handle: 0)))
    }

    @Test("a response of the wrong kind, or an Error Response for another request, is an invalid response")
    func wrongResponses() throws {
        for wrong in [[0x13], errorRsp(0x12, 0x0003, 0x01), [0x01, 0x0A, 0x03]] as [[UInt8]] {
            let done = Completion<ReadResult>()
            try ClientScript().exchange(.start { $0.read(0x0003, done.record) }, .out([0x0A, 0x03, 0x00]), .in(wrong))
            guard case .failure(.invalidResponse)? = done.value else { Issue.record("\(wrong): \(done.calls)"); continue }
        }
    }

    @Test("a stray Exchange MTU Response fails the read and does not change the MTU")
    func strayMTUResponse() throws {
        let done = Completion<ReadResult>()
        let script = ClientScript(preferredMTU: 517)
        try script.exchange(.start { $0.read(0x0003, done.record) }, .out([0x0A, 0x03, 0x00]), .in([0x03, 0x00, 0x02]))
        guard case .failure(.invalidResponse)? = done.value else { Issue.record("\(done.calls)"); return }
        #expect(script.client.mtu == 23)
    }

    @Test("GAW/CL/BV-03-C write characteristic value")
    func write() throws {
        let done = Completion<WriteResult>()
        try ClientScript().exchange(
            .start { $0.write([0x01, 0x02, 0x03], to: 0x0007, done.record) },
            .out([0x12, 0x07, 0x00, 0x01, 0x02, 0x03]),
            .in([0x13]))
        #expect(done.succeeded())
    }

    @Test("GAW/CL/BI-03-C a write refused by the server reports .att(code, handle)")
    func writeRefused() throws {
        let done = Completion<WriteResult>()
        try ClientScript().exchange(
            .start { $0.write([0x01], to: 0x0007, done.record) },
            .out([0x12, 0x07, 0x00, 0x01]),
            .in(errorRsp(0x12, 0x0007, 0x03)))
        #expect(done.failure() == GATTClientError.att(.writeNotPermitted, handle: 7))
    }

    @Test("GAW/CL/BV-05-C reliable write of a long value: echoes checked, then executed")
    func reliableWrite() throws {
        let done = Completion<WriteResult>()
        let v = (0..<40).map { UInt8(0x80 + $0) }
        try ClientScript().exchange(
            .start { $0.write(v, to: 0x0007, done.record) },
            .out([0x16, 0x07, 0x00, 0x00, 0x00] + v[0..<18]), .in([0x17, 0x07, 0x00, 0x00, 0x00] + v[0..<18]),
            .out([0x16, 0x07, 0x00, 0x12, 0x00] + v[18..<36]), .in([0x17, 0x07, 0x00, 0x12, 0x00] + v[18..<36]),
            .out([0x16, 0x07, 0x00, 0x24, 0x00] + v[36...]), .in([0x17, 0x07, 0x00, 0x24, 0x00] + v[36...]),
            .out([0x18, 0x01]), .in([0x19]))
        #expect(done.succeeded())
    }

    @Test("a corrupted echo cancels the queued writes with Execute Write flags 0x00 and fails the write",
          arguments: ["value", "offset", "handle"])
    func reliableWriteBadEcho(_ corrupt: String) throws {
        let done = Completion<WriteResult>()
        let v = (0..<30).map { UInt8($0) }
        var echo: [UInt8] = [0x17, 0x07, 0x00, 0x00, 0x00] + v[0..<18]
        switch corrupt {
        case "value": echo[10] ^= 0xFF
        case "offset": echo[3] = 0x01
        default: echo[1] = 0x08
        }
        try ClientScript().exchange(
            .start { $0.write(v, to: 0x0007, done.record) },
            .out([0x16, 0x07, 0x00, 0x00, 0x00] + v[0..<18]),
            .in(echo),
            .out([0x18, 0x00]),
            .in([0x19]))
        guard case .invalidResponse? = done.failure() else { Issue.record("\(done.calls)"); return }
    }

    @Test("a refused prepare cancels the queue and reports the server's error")
    func reliableWritePrepareRefused() throws {
        let done = Completion<WriteResult>()
        let v = [UInt8](repeating: 9, count: 30)
        try ClientScript().exchange(
            .start { $0.write(v, to: 0x0007, done.record) },
            .out([0x16, 0x07, 0x00, 0x00, 0x00] + v[0..<18]),
            .in(errorRsp(0x16, 0x0007, 0x09)),
            .out([0x18, 0x00]),
            .in([0x19]))
        #expect(done.failure() == GATTClientError.att(.prepareQueueFull, handle: 7))
    }

    @Test("a refused execute reports the server's error")
    func reliableWriteExecuteRefused() throws {
        let done = Completion<WriteResult>()
        let v = [UInt8](repeating: 9, count: 30)
        try ClientScript().exchange(
            .start { $0.write(v, to: 0x0007, done.record) },
            .out([0x16, 0x07, 0x00, 0x00, 0x00] + v[0..<18]), .in([0x17, 0x07, 0x00, 0x00, 0x00] + v[0..<18]),
            .out([0x16, 0x07, 0x00, 0x12, 0x00] + v[18...]), .in([0x17, 0x07, 0x00, 0x12, 0x00] + v[18...]),
            .out([0x18, 0x01]), .in(errorRsp(0x18, 0x0007, 0x0D)))
        #expect(done.failure() == GATTClientError.att(.invalidAttributeValueLength, handle: 7))
    }

    @Test("a value longer than 512 octets fails at once, and nothing is sent")
    func writeTooLong() throws {
        let done = Completion<WriteResult>()
        try ClientScript().exchange(.start { $0.write([UInt8](repeating: 0, count: 513), to: 7, done.record) })
        guard case .invalidValue? = done.failure() else { Issue.record("\(done.calls)"); return }
    }

    @Test("GAW/CL/BV-01-C write without response goes out as a Write Command, at most ATT_MTU − 3 octets")
    func writeWithoutResponse() throws {
        let script = ClientScript()
        try script.exchange(
            .trigger { try $0.client.writeWithoutResponse([0x01, 0x02, 0x03], to: 0x0007) },
            .out([0x52, 0x07, 0x00, 0x01, 0x02, 0x03]))
        #expect(throws: GATTClientError.self) { try script.client.writeWithoutResponse([UInt8](repeating: 0, count: 21), to: 7) }
        #expect(!script.client.hasOutgoing)
    }

    @Test("subscribing writes the CCCD: notify 0x0001, indicate 0x0002")
    func subscribe() throws {
        let notify = Completion<WriteResult>(), indicate = Completion<WriteResult>()
        try ClientScript().exchange(
            .start { $0.setClientConfiguration(.notify, descriptor: 0x0004, notify.record) },
            .out([0x12, 0x04, 0x00, 0x01, 0x00]), .in([0x13]),
            .start { $0.setClientConfiguration([.indicate], descriptor: 0x0023, indicate.record) },
            .out([0x12, 0x23, 0x00, 0x02, 0x00]), .in([0x13]))
        #expect(notify.succeeded() && indicate.succeeded())
    }
}
