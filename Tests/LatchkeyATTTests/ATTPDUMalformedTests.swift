import LatchkeyATT
import LatchkeyTestKit
import Testing

/// One malformed buffer and the decode error it must give.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var error: ATTDecodeError
    var testDescription: String { name }
    init(_ name: String, _ bytes: [UInt8], _ error: ATTDecodeError) {
        self.name = name; self.bytes = bytes; self.error = error
    }
    static func length(_ name: String, _ bytes: [UInt8]) -> Self {
        Self(name, bytes, .invalidLength(ATTOpcode(rawValue: bytes[0])))
    }
}

@Suite("Malformed ATT PDUs")
struct ATTPDUMalformedTests {
    static let cases: [MalformedCase] = [
        MalformedCase("empty buffer", [], .empty),
        MalformedCase("opcode 0x00", [0x00], .unknownOpcode(0x00)),
        MalformedCase("opcode 0x14 (unassigned)", [0x14, 0x01, 0x00], .unknownOpcode(0x14)),
        MalformedCase("Read Multiple Variable (not supported)", [0x20, 0x01, 0x00, 0x02, 0x00], .unknownOpcode(0x20)),
        MalformedCase("unknown command 0x53", [0x53, 0x01, 0x00], .unknownOpcode(0x53)),
        MalformedCase("opcode 0xFF", [0xFF], .unknownOpcode(0xFF)),
        .length("Error Response, 4 octets", [0x01, 0x0A, 0x01, 0x00]),
        .length("Error Response, 6 octets", [0x01, 0x0A, 0x01, 0x00, 0x01, 0x00]),
        .length("Exchange MTU Request, 2 octets", [0x02, 0x17]),
        .length("Exchange MTU Request, 4 octets", [0x02, 0x17, 0x00, 0x00]),
        .length("Exchange MTU Response, 2 octets", [0x03, 0x17]),
        .length("Find Information Request, 4 octets", [0x04, 0x01, 0x00, 0xFF]),
        .length("Find Information Request, 6 octets", [0x04, 0x01, 0x00, 0xFF, 0xFF, 0x00]),
        .length("Find Information Response, format 3", [0x05, 0x03, 0x01, 0x00, 0x00, 0x28]),
        .length("Find Information Response, format 1 with 3 octets", [0x05, 0x01, 0x01, 0x00, 0x00]),
        .length("Find Information Response, format 2 with a 16-bit pair", [0x05, 0x02, 0x01, 0x00, 0x00, 0x28]),
        .length("Find Information Response, no pairs", [0x05, 0x01]),
        .length("Find By Type Value Request, 6 octets", [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00]),
        .length("Find By Type Value Response, empty", [0x07]),
        .length("Find By Type Value Response, 3 octets", [0x07, 0x01, 0x00, 0x05]),
        .length("Read By Type Request, no UUID", [0x08, 0x01, 0x00, 0xFF, 0xFF]),
        .length("Read By Type Request, 1-octet UUID", [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03]),
        .length("Read By Type Request, 3-octet UUID", [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28, 0x00]),
        .length("Read By Type Request, 4-octet UUID", [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28, 0x00, 0x00]),
        .length("Read By Type Request, 15-octet UUID", [0x08, 0x01, 0x00, 0xFF, 0xFF] + [UInt8](repeating: 1, count: 15)),
        .length("Read By Type Request, 17-octet UUID", [0x08, 0x01, 0x00, 0xFF, 0xFF] + [UInt8](repeating: 1, count: 17)),
        .length("Read By Type Response, entry length 1", [0x09, 0x01, 0x02]),
        .length("Read By Type Response, no entries", [0x09, 0x04]),
        .length("Read By Type Response, partial entry", [0x09, 0x04, 0x02, 0x00, 0x01, 0x02, 0x03, 0x00, 0x01]),
        .length("Read Request, 2 octets", [0x0A, 0x03]),
        .length("Read Request, 4 octets", [0x0A, 0x03, 0x00, 0x00]),
        .length("Read Blob Request, 4 octets", [0x0C, 0x03, 0x00, 0x00]),
        .length("Read Blob Request, 6 octets", [0x0C, 0x03, 0x00, 0x00, 0x00, 0x00]),
        .length("Read Multiple Request, no handles", [0x0E]),
        .length("Read Multiple Request, one handle", [0x0E, 0x03, 0x00]),
        .length("Read Multiple Request, odd length", [0x0E, 0x03, 0x00, 0x05]),
        .length("Read By Group Type Request, 4-octet UUID", [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x00, 0x00]),
        .length("Read By Group Type Response, entry length 3", [0x11, 0x03, 0x01, 0x00, 0x05]),
        .length("Read By Group Type Response, partial entry", [0x11, 0x06, 0x01, 0x00, 0x04, 0x00, 0x01]),
        .length("Write Request, 2 octets", [0x12, 0x03]),
        .length("Write Response, 2 octets", [0x13, 0x00]),
        .length("Write Command, 2 octets", [0x52, 0x03]),
        .length("Signed Write Command, 14 octets", [0xD2, 0x03, 0x00] + [UInt8](repeating: 0, count: 11)),
        .length("Prepare Write Request, 4 octets", [0x16, 0x03, 0x00, 0x00]),
        .length("Prepare Write Response, 4 octets", [0x17, 0x03, 0x00, 0x00]),
        MalformedCase("Execute Write Request, flags 0x02", [0x18, 0x02], .invalidField(.executeWriteRequest)),
        MalformedCase("Execute Write Request, flags 0xFF", [0x18, 0xFF], .invalidField(.executeWriteRequest)),
        .length("Execute Write Request, no flags", [0x18]),
        .length("Execute Write Request, 3 octets", [0x18, 0x01, 0x00]),
        .length("Execute Write Response, 2 octets", [0x19, 0x00]),
        .length("Handle Value Notification, 2 octets", [0x1B, 0x03]),
        .length("Handle Value Indication, 2 octets", [0x1D, 0x03]),
        .length("Handle Value Confirmation, 2 octets", [0x1E, 0x00]),
    ]

    @Test("decoding fails with the right error", arguments: cases)
    func rejects(_ c: MalformedCase) {
        #expect(throws: c.error) { try ATTPDU(decoding: c.bytes) }
    }

    @Test("the decode error names the opcode it could not decode")
    func errorNamesOpcode() {
        #expect(ATTDecodeError.invalidLength(.readRequest).opcode == .readRequest)
        #expect(ATTDecodeError.invalidField(.executeWriteRequest).opcode == .executeWriteRequest)
        #expect(ATTDecodeError.unknownOpcode(0x20).opcode == nil)
        #expect(ATTDecodeError.empty.opcode == nil)
    }

    @Test("every truncation and one-octet extension of a valid PDU decodes or throws",
          arguments: RandomPDU.allOpcodes)
    func nearMissesNeverCrash(_ opcode: ATTOpcode) {
        var g = SeededGenerator(seed: 0xBAD_0000 &+ UInt64(opcode.rawValue))
        let verifier = PDUParserVerifier()
        for _ in 0..<8 {
            let vector = RandomPDU.make(opcode, using: &g).bytes
            let report = verifier.verify(vector)
            #expect(report.problems.isEmpty, "\(report)")
            #expect(report.checked == vector.count + 257)
        }
    }

    @Test("random bytes never crash the decoder, and what decodes re-encodes to itself")
    func randomBytes() {
        var g = SeededGenerator(seed: 0xF022)
        var decoded = 0
        for _ in 0..<20_000 {
            let n = Int.random(in: 0...40, using: &g)
            var bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &g) }
            // Bias the first octet towards real opcodes so most inputs reach a decoder arm.
            if !bytes.isEmpty, Bool.random(using: &g) {
                bytes[0] = RandomPDU.allOpcodes.randomElement(using: &g)!.rawValue
            }
            guard let pdu = try? ATTPDU(decoding: bytes) else { continue }
            decoded += 1
            #expect(pdu.bytes == bytes)
        }
        #expect(decoded > 1_000)
    }
}
