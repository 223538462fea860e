// libFuzzer target: ATT PDU decoding (LatchkeyATT). Invariant: a buffer either fails to
// decode or decodes to a PDU that encodes back to exactly the same octets.
import FuzzSupport
import LatchkeyATT
import LatchkeyTestKit

func decode(_ bytes: [UInt8]) {
    guard let pdu = try? ATTPDU(decoding: bytes[...]) else { return }
    let again = pdu.bytes
    FuzzDriver.check(again == bytes, "\(pdu) re-encodes as \(again), not \(bytes)")
}

/// libFuzzer's callback. Its C name also satisfies libFuzzer's own `main` object, which the
/// link pulls in even though `main.swift`'s main runs (SwiftPM points `main` at it).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    decode(FuzzDriver.bytes(data, size))
    return 0
}

FuzzDriver.main(seeds: {
    // Three random, well-formed instances of every opcode (LatchkeyTestKit.RandomPDU).
    var g = SeededGenerator(seed: 0x4154_54)
    return RandomPDU.allOpcodes.flatMap { op in (0..<3).map { _ in RandomPDU.make(op, using: &g).bytes } }
}, testOneInput)
