/// "03 00 ff ff" → [0x03, 0x00, 0xff, 0xff]: test vectors written the way btmon prints them.
func bytes(_ text: String) -> [UInt8] {
    text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { UInt8($0, radix: 16)! }
}
