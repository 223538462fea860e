import LatchkeyATT

/// Little-endian wire bytes of the fixtures' vendor UUIDs, 8E3Fxxxx-2C5D-4B6A-9C1E-7F4A2B3C4D5E,
/// spelled out so the tests do not depend on the UUID encoder they also check.
func vendorLE(_ short: UInt16) -> [UInt8] {
    [0x5E, 0x4D, 0x3C, 0x2B, 0x4A, 0x7F, 0x1E, 0x9C, 0x6A, 0x4B, 0x5D, 0x2C,
     UInt8(short & 0xFF), UInt8(short >> 8), 0x3F, 0x8E]
}

/// An Error Response: request opcode, handle, error code.
func errorRsp(_ request: UInt8, _ handle: UInt16, _ code: UInt8) -> [UInt8] {
    [0x01, request, UInt8(handle & 0xFF), UInt8(handle >> 8), code]
}

extension UInt16 {
    /// Little-endian bytes, as handles and offsets travel.
    var le: [UInt8] { [UInt8(self & 0xFF), UInt8(self >> 8)] }
}
