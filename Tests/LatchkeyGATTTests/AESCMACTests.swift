import LatchkeyGATT
import Testing

/// Hex text (spaces allowed) to bytes, for the published vectors below.
private func octets(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// The AES-CMAC behind the Database Hash, against the published vectors.
@Suite("AES-CMAC")
struct AESCMACTests {
    /// RFC 4493 section 4: one key, four message lengths (empty, one block, a partial last
    /// block, four whole blocks), so both subkeys and the padding are exercised.
    static let rfcKey = octets("2b7e1516 28aed2a6 abf71588 09cf4f3c")
    static let rfcMessage = octets("""
        6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51
        30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710
        """)

    @Test("RFC 4493 examples 1–4", arguments: [
        (0, "bb1d6929 e9593728 7fa37d12 9b756746"),
        (16, "070a16b4 6b4d4144 f79bdd9d d04a287c"),
        (40, "dfa66747 de9ae630 30ca3261 1497c827"),
        (64, "51f0bebf 7e3b9d92 fc497417 79363cfe"),
    ])
    func rfc4493(length: Int, mac: String) {
        #expect(AESCMAC.mac(key: Self.rfcKey, message: Array(Self.rfcMessage.prefix(length))) == octets(mac))
    }

    /// The Core specification's database hash example (Vol 3 Part G, Appendix B): GAP,
    /// GATT (Service Changed, Client Supported Features, Database Hash), Glucose with an
    /// include and an extended-properties descriptor, Battery as a secondary service.
    @Test("the Core specification's Database Hash example")
    func coreSpecificationExample() {
        let m = octets("""
            010000280018020003280a0300002a04000328020500012a0600002801180700
            0328200800052a090002290a0003280a0b00292b0c000328020d002a2b0e0000
            2808180f000228140016000f1810000328a21100182a12000229130000290000
            140001280f1815000328021600192a
            """)
        #expect(AESCMAC.mac(key: [UInt8](repeating: 0, count: 16), message: m) == octets("F1CA2D48ECF58BAC8A8830BBB9FBA990"))
    }

    /// What RFC 4493 example 1 does not show: a one-bit change anywhere changes the MAC.
    @Test("any change to the message changes the MAC")
    func sensitivity() {
        let base = AESCMAC.mac(key: Self.rfcKey, message: Self.rfcMessage)
        for i in [0, 17, 63] {
            var m = Self.rfcMessage
            m[i] ^= 0x01
            #expect(AESCMAC.mac(key: Self.rfcKey, message: m) != base)
        }
    }
}
