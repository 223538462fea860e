import LatchkeyATT

/// (c, d) A mix of request PDUs as a server receives them, laid end to end in one buffer so
/// each decode reads a slice of it (as the bearer hands the server a received buffer).
struct RequestMix {
    let buffer: [UInt8]
    let ranges: [Range<Int>]

    init() {
        let uuid128: [UInt8] = [0x5E, 0x4D, 0x3C, 0x2B, 0x4A, 0x7F, 0x1E, 0x9C, 0x6A, 0x4B, 0x5D, 0x2C, 0x02, 0x00, 0x3F, 0x8E]
        let vectors: [[UInt8]] = [
            [0x02, 0x05, 0x02],                                             // Exchange MTU
            [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28],                     // Read By Group Type
            [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0F, 0x18],         // Find By Type Value
            [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28],                     // Read By Type, 16-bit
            [0x08, 0x01, 0x00, 0xFF, 0xFF] + uuid128,                       // Read By Type, 128-bit
            [0x04, 0x04, 0x00, 0x10, 0x00],                                 // Find Information
            [0x0A, 0x03, 0x00],                                             // Read
            [0x0C, 0x03, 0x00, 0x16, 0x00],                                 // Read Blob
            [0x0E, 0x03, 0x00, 0x05, 0x00, 0x07, 0x00],                     // Read Multiple
            [0x12, 0x07, 0x00] + [UInt8](repeating: 0xA5, count: 20),       // Write Request
            [0x52, 0x07, 0x00] + [UInt8](repeating: 0x5A, count: 20),       // Write Command
            [0x16, 0x07, 0x00, 0x00, 0x00] + [UInt8](repeating: 0x11, count: 18),  // Prepare Write
            [0x18, 0x01],                                                   // Execute Write
            [0x1E],                                                         // Confirmation
        ]
        var buffer: [UInt8] = [], ranges: [Range<Int>] = []
        for v in vectors {
            ranges.append(buffer.count..<(buffer.count + v.count))
            buffer += v
        }
        self.buffer = buffer
        self.ranges = ranges
    }

    var octetsPerPass: Int { buffer.count }
}

/// Decodes the mix `passes` times; returns a checksum of what was decoded so the decoding
/// cannot be optimised away.
@inline(never)
func decodeMix(_ mix: RequestMix, passes: Int) -> Int {
    var checksum = 0
    for _ in 0..<passes {
        for r in mix.ranges {
            do {
                let pdu = try ATTPDU(decoding: mix.buffer[r])
                checksum &+= pdu.encodedLength &+ Int(pdu.opcode.rawValue)
            } catch {
                preconditionFailure("mix vector failed to decode: \(error)")
            }
        }
    }
    return checksum
}
