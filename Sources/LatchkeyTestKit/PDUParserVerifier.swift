import LatchkeyATT
import LatchkeyGATT

/// Checks a parser against every near miss of a valid vector, like NIO's
/// `ByteToMessageDecoderVerifier`: the vector must decode, and each truncation and each
/// single-octet extension (all 256 values) must either decode or throw, never crash. A
/// variant that decodes must encode back to exactly its bytes.
/// For a request or command vector, the server is checked too: it answers a variant that
/// fails to decode with exactly one Invalid PDU Error Response (Vol 3, Part F, 3.4.1.1)
/// naming the opcode and handle 0, answers a command with nothing (3.3.1), and answers a
/// variant that decodes with exactly one response to that request or one Error Response.
public struct PDUParserVerifier {
    public struct Report: CustomStringConvertible {
        /// Variants tried.
        public var checked = 0
        /// Variants that decoded.
        public var decoded = 0
        public var problems: [String] = []
        public var description: String {
            "\(checked) variants, \(decoded) decoded, \(problems.count) problems" +
                (problems.isEmpty ? "" : ":\n" + problems.prefix(20).joined(separator: "\n"))
        }
    }

    /// Makes a fresh server for each variant, so one variant's effects cannot hide another's.
    public var makeServer: (() -> GATTServer)?

    public init(makeServer: (() -> GATTServer)? = nil) { self.makeServer = makeServer }

    /// The vector itself, every proper prefix of it, then the vector with each octet appended.
    public static func variants(of vector: [UInt8]) -> [[UInt8]] {
        [vector] + (0..<vector.count).map { Array(vector[..<$0]) } + (0...255).map { vector + [UInt8($0)] }
    }

    public func verify(_ vector: [UInt8]) -> Report {
        var report = Report()
        // The question is only whether it decodes; the error itself is not part of the report.
        if (try? ATTPDU(decoding: vector[...])) == nil {
            report.problems.append("the vector [\(hex(vector))] itself does not decode")
        }
        for variant in Self.variants(of: vector) {
            report.checked += 1
            let decoded: ATTPDU?
            do {
                let pdu = try ATTPDU(decoding: variant[...])
                report.decoded += 1
                if pdu.bytes != variant {
                    report.problems.append("[\(hex(variant))] re-encodes as [\(hex(pdu.bytes))]")
                }
                decoded = pdu
            } catch {
                decoded = nil
            }
            if let makeServer, let op = variant.first.map(ATTOpcode.init(rawValue:)) {
                if let problem = Self.checkServerAnswer(makeServer().handle(variant[...]), to: variant, op: op, decoded: decoded) {
                    report.problems.append(problem)
                }
            }
        }
        return report
    }

    private static func checkServerAnswer(_ answer: [UInt8]?, to variant: [UInt8], op: ATTOpcode,
                                          decoded: ATTPDU?) -> String? {
        let what = "[\(hex(variant))] answered [\(answer.map { hex($0) } ?? "nothing")]"
        if op.isCommand {
            return answer == nil ? nil : what + ", expected nothing for a command"
        }
        guard op.isRequest else { return nil }
        guard let answer else { return what + ", expected one response" }
        if decoded == nil {
            let invalidPDU = ATTPDU.errorResponse(request: op, handle: 0, error: .invalidPDU).bytes
            return answer == invalidPDU ? nil : what + ", expected [\(hex(invalidPDU))]"
        }
        // Undecodable is the finding, reported in the return below.
        guard let response = try? ATTPDU(decoding: answer[...]) else { return what + ", which does not decode" }
        if response.opcode == op.responseOpcode { return nil }
        if case .errorResponse(let request, _, _) = response, request == op { return nil }
        return what + ", expected \(op.responseOpcode.map { "\($0)" } ?? "a response") or an Error Response for \(op)"
    }
}
