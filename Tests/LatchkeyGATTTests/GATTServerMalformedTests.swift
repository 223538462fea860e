import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

/// One request the server cannot decode, and the answer it must give.
struct MalformedRequest: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    /// nil: dropped without an answer.
    var answer: [UInt8]?
    var testDescription: String { name }
    init(_ name: String, _ bytes: [UInt8], _ answer: [UInt8]?) { self.name = name; self.bytes = bytes; self.answer = answer }
    /// Invalid PDU, on handle 0, for the request's own opcode.
    static func invalid(_ name: String, _ bytes: [UInt8]) -> Self { Self(name, bytes, errorRsp(bytes[0], 0, 0x04)) }
}

@Suite("GATT server: malformed and unknown PDUs")
struct GATTServerMalformedTests {
    static let requests: [MalformedRequest] = [
        .invalid("Exchange MTU Request, 2 octets", [0x02, 0x17]),
        .invalid("Exchange MTU Request, 4 octets", [0x02, 0x17, 0x00, 0x00]),
        .invalid("Find Information Request, 4 octets", [0x04, 0x01, 0x00, 0xFF]),
        .invalid("Find Information Request, 6 octets", [0x04, 0x01, 0x00, 0xFF, 0xFF, 0x00]),
        .invalid("Find By Type Value Request, no type", [0x06, 0x01, 0x00, 0xFF, 0xFF]),
        .invalid("Read By Type Request, 4-octet UUID", [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28, 0x00, 0x00]),
        .invalid("Read By Type Request, 1-octet UUID", [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03]),
        .invalid("Read By Type Request, 17-octet UUID", [0x08, 0x01, 0x00, 0xFF, 0xFF] + [UInt8](repeating: 0, count: 17)),
        .invalid("Read Request, 1 octet of handle", [0x0A, 0x03]),
        .invalid("Read Request, 4 octets", [0x0A, 0x03, 0x00, 0x00]),
        .invalid("Read Request, opcode only", [0x0A]),
        .invalid("Read Blob Request, no offset", [0x0C, 0x03, 0x00]),
        .invalid("Read Multiple Request with one handle", [0x0E, 0x03, 0x00]),
        .invalid("Read Multiple Request, odd length", [0x0E, 0x03, 0x00, 0x05]),
        .invalid("Read By Group Type Request, 3-octet UUID", [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x00]),
        .invalid("Write Request, no handle", [0x12]),
        .invalid("Prepare Write Request, no offset", [0x16, 0x07, 0x00]),
        .invalid("Execute Write Request, flags 0x02", [0x18, 0x02]),
        .invalid("Execute Write Request, no flags", [0x18]),
        MalformedRequest("Read Multiple Variable Request: Request Not Supported", [0x20, 0x03, 0x00, 0x05, 0x00],
                         errorRsp(0x20, 0, 0x06)),
        MalformedRequest("unassigned opcode 0x14: Request Not Supported", [0x14, 0x01], errorRsp(0x14, 0, 0x06)),
        MalformedRequest("unassigned opcode 0x3F: Request Not Supported", [0x3F], errorRsp(0x3F, 0, 0x06)),
        MalformedRequest("unknown command 0x53: dropped", [0x53, 0x03, 0x00], nil),
        MalformedRequest("unknown command 0x7F: dropped", [0x7F], nil),
        MalformedRequest("unknown signed command 0xD3: dropped", [0xD3, 0x01, 0x02], nil),
        MalformedRequest("Write Command, short: dropped", [0x52, 0x07], nil),
        MalformedRequest("Signed Write Command, no signature: dropped", [0xD2, 0x07, 0x00, 0x01], nil),
        MalformedRequest("Read Response sent to a server: dropped", [0x0B, 0x01], nil),
        MalformedRequest("Error Response sent to a server: dropped", [0x01, 0x0A, 0x03, 0x00, 0x01], nil),
        MalformedRequest("malformed Error Response: dropped", [0x01, 0x0A], nil),
        MalformedRequest("Handle Value Notification sent to a server: dropped", [0x1B, 0x03, 0x00, 0x01], nil),
        MalformedRequest("malformed Handle Value Confirmation: dropped", [0x1E, 0x01], nil),
        MalformedRequest("empty PDU: dropped", [], nil),
        // Longer than ATT_MTU (23 before an exchange): the echo of this Prepare Write would
        // not fit either. Found by Tests/fuzz (fuzz-gatt-server, crash-aa0df9e1).
        .invalid("Prepare Write Request of 32 octets at ATT_MTU 23",
                 [0x16, 0x28, 0x00, 0x00, 0x00] + [UInt8](repeating: 0x29, count: 27)),
        .invalid("Write Request of 24 octets at ATT_MTU 23", [0x12, 0x28, 0x00] + [UInt8](repeating: 1, count: 21)),
        MalformedRequest("Write Command of 24 octets at ATT_MTU 23: dropped",
                         [0x52, 0x28, 0x00] + [UInt8](repeating: 1, count: 21), nil),
    ]

    @Test("each malformed or unknown PDU gets exactly the spec's answer", arguments: requests)
    func answer(_ c: MalformedRequest) throws {
        let script = ServerScript(.large())
        if let answer = c.answer {
            try script.exchange(.in(c.bytes), .out(answer))
        } else {
            try script.exchange(.in(c.bytes))
        }
        // The bearer still works afterwards.
        try script.exchange(.in([0x0A, 0x12, 0x00]), .out([0x0B, 0x50]))
    }

    /// Valid requests and commands, against the large fixture, whose near misses the verifier tries.
    static let vectors: [[UInt8]] = [
        [0x02, 0x00, 0x02],
        [0x04, 0x01, 0x00, 0xFF, 0xFF],
        [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0F, 0x18],
        [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28],
        [0x08, 0x01, 0x00, 0xFF, 0xFF] + vendorLE(0x0004),
        [0x0A, 0x28, 0x00],
        [0x0C, 0x28, 0x00, 0x16, 0x00],
        [0x0E, 0x03, 0x00, 0x05, 0x00, 0x12, 0x00],
        [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28],
        [0x10, 0x01, 0x00, 0xFF, 0xFF] + vendorLE(0x0001),
        [0x12, 0x28, 0x00, 0x01, 0x02],
        [0x12, 0x23, 0x00, 0x03, 0x00],
        [0x16, 0x28, 0x00, 0x00, 0x00, 0x01, 0x02],
        [0x18, 0x01],
        [0x52, 0x62, 0x00, 0x01],
        [0xD2, 0x62, 0x00, 0x01] + [UInt8](repeating: 0xAA, count: 12),
    ]

    @Test("every truncation and extension of a valid request gets one Invalid PDU or one proper answer",
          arguments: vectors)
    func nearMisses(_ vector: [UInt8]) {
        let verifier = PDUParserVerifier(makeServer: {
            let fixture = Fixture.large()
            let server = GATTServer(database: fixture.database)
            server.delegate = fixture.delegate
            return server
        })
        let report = verifier.verify(vector)
        #expect(report.problems.isEmpty, "\(report)")
        #expect(report.checked == vector.count + 257)
        #expect(report.decoded > 0)
    }

    @Test("thousands of random requests in a row: each answered once, commands never, the server survives")
    func randomRequestStream() throws {
        let fixture = Fixture.large()
        let server = GATTServer(database: fixture.database, preferredMTU: 517)
        server.delegate = fixture.delegate
        var g = SeededGenerator(seed: 0x5E4E_0001)
        let clientToServer = RandomPDU.allOpcodes.filter { $0.isRequest || $0.isCommand || $0 == .handleValueConfirmation }
        #expect(clientToServer.count == 14)
        for _ in 0..<5_000 {
            let op = clientToServer.randomElement(using: &g)!
            var pdu = RandomPDU.make(op, using: &g)
            // Aim half the handles at the database so the requests reach the attribute code.
            if Bool.random(using: &g) { pdu = aimed(pdu, using: &g) }
            let answer = server.handle(pdu.bytes[...])
            if op.isRequest {
                let response = try #require(answer.map { try ATTPDU(decoding: $0) })
                if case .errorResponse(let request, _, _) = response {
                    #expect(request == op)
                } else {
                    #expect(response.opcode == op.responseOpcode)
                }
                if let answer { #expect(answer.count <= server.mtu) }
            } else {
                #expect(answer == nil)
            }
        }
    }

    /// The same PDU with its handle(s) moved into the large fixture's range.
    func aimed(_ pdu: ATTPDU, using g: inout SeededGenerator) -> ATTPDU {
        let h = UInt16.random(in: 0...0x70, using: &g)
        switch pdu {
        case .readRequest: return .readRequest(handle: h)
        case .readBlobRequest(_, let offset): return .readBlobRequest(handle: h, offset: offset % 128)
        case .writeRequest(_, let v): return .writeRequest(handle: h, value: v.prefix(20))
        case .writeCommand(_, let v): return .writeCommand(handle: h, value: v.prefix(20))
        case .prepareWriteRequest(_, let o, let v): return .prepareWriteRequest(handle: h, offset: o % 128, value: v.prefix(18))
        case .findInformationRequest(let s, _): return .findInformationRequest(start: h, end: s)
        case .readByTypeRequest(_, let e, _):
            return .readByTypeRequest(start: h, end: e, type: [.characteristic, LargeDB.eventLogUUID, BluetoothUUID(0x2A19)]
                .randomElement(using: &g)!)
        default: return pdu
        }
    }
}
