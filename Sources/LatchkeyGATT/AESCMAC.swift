/// AES-CMAC (RFC 4493) over AES-128 (FIPS-197), for the GATT Database Hash (Core Vol 3
/// Part G 7.3.1), which is AES-CMAC with an all-zero key over the database's structure.
/// Written here rather than taken from swift-crypto because the hash keeps LatchkeyGATT
/// stdlib-only (no BoringSSL under the GATT server the fuzzers drive), and because nothing
/// about it is secret: the key is public (zero) and the output is a public fingerprint of
/// the attribute table, so the table-lookup AES below needs no side-channel hardening.
/// Checked against FIPS-197 C.1, the RFC 4493 examples and the Core specification's own
/// database hash example (`AESCMACTests`).
public enum AESCMAC {
    /// The 16-octet MAC of `message` under the 16-octet `key`, most significant octet first.
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        precondition(key.count == 16, "AES-128 takes a 16-octet key")
        let cipher = AES128(key: key)
        // Subkeys (RFC 4493 2.3): L = AES(K, 0); K1 = L << 1 (^ Rb); K2 = K1 << 1 (^ Rb).
        let l = cipher.encrypt([UInt8](repeating: 0, count: 16))
        let k1 = doubled(l), k2 = doubled(k1)
        // A message of whole blocks (not empty) ends with K1; anything else is padded with
        // 10...0 and ends with K2 (RFC 4493 2.4).
        let complete = !message.isEmpty && message.count % 16 == 0
        let blocks = max(1, (message.count + 15) / 16)
        var x = [UInt8](repeating: 0, count: 16)
        for b in 0..<blocks {
            var block = [UInt8](repeating: 0, count: 16)
            let start = b * 16, end = min(start + 16, message.count)
            for i in start..<end { block[i - start] = message[i] }
            if b == blocks - 1 {
                if complete {
                    for i in 0..<16 { block[i] ^= k1[i] }
                } else {
                    block[end - start] = 0x80
                    for i in 0..<16 { block[i] ^= k2[i] }
                }
            }
            for i in 0..<16 { x[i] ^= block[i] }
            x = cipher.encrypt(x)
        }
        return x
    }

    /// Multiplication by x in GF(2^128): a left shift, folding the carry back with Rb = 0x87.
    private static func doubled(_ block: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 {
            out[i] = block[i] << 1 | (i < 15 ? block[i + 1] >> 7 : 0)
        }
        if block[0] & 0x80 != 0 { out[15] ^= 0x87 }
        return out
    }
}

/// AES-128 encryption of one block (FIPS-197), the only direction CMAC needs.
struct AES128 {
    private var roundKeys: [UInt8] = []  // 11 round keys of 16 octets

    init(key: [UInt8]) {
        // Key expansion (FIPS-197 5.2): 44 words, each the word 4 back XOR the previous one,
        // rotated, substituted and XORed with the round constant every fourth word.
        var w = key
        var rcon: UInt8 = 0x01
        while w.count < 176 {
            var t = Array(w[(w.count - 4)...])
            if w.count % 16 == 0 {
                t = [Self.sbox[Int(t[1])] ^ rcon, Self.sbox[Int(t[2])], Self.sbox[Int(t[3])], Self.sbox[Int(t[0])]]
                rcon = Self.xtime(rcon)
            }
            for i in 0..<4 { w.append(w[w.count - 16] ^ t[i]) }
        }
        roundKeys = w
    }

    func encrypt(_ input: [UInt8]) -> [UInt8] {
        var s = input
        addRoundKey(&s, 0)
        for round in 1...10 {
            for i in 0..<16 { s[i] = Self.sbox[Int(s[i])] }  // SubBytes
            // ShiftRows: row r (octets r, r+4, r+8, r+12 of the column-major state) turns left by r.
            s = [s[0], s[5], s[10], s[15], s[4], s[9], s[14], s[3],
                 s[8], s[13], s[2], s[7], s[12], s[1], s[6], s[11]]
            if round < 10 {  // MixColumns, skipped in the last round
                for c in 0..<4 {
                    let a0 = s[4 * c], a1 = s[4 * c + 1], a2 = s[4 * c + 2], a3 = s[4 * c + 3]
                    let all = a0 ^ a1 ^ a2 ^ a3
                    s[4 * c] = a0 ^ all ^ Self.xtime(a0 ^ a1)
                    s[4 * c + 1] = a1 ^ all ^ Self.xtime(a1 ^ a2)
                    s[4 * c + 2] = a2 ^ all ^ Self.xtime(a2 ^ a3)
                    s[4 * c + 3] = a3 ^ all ^ Self.xtime(a3 ^ a0)
                }
            }
            addRoundKey(&s, round)
        }
        return s
    }

    private func addRoundKey(_ s: inout [UInt8], _ round: Int) {
        for i in 0..<16 { s[i] ^= roundKeys[16 * round + i] }
    }

    /// Multiplication by x in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
    private static func xtime(_ b: UInt8) -> UInt8 { b << 1 ^ (b & 0x80 != 0 ? 0x1B : 0) }

    /// The S-box (FIPS-197 figure 7).
    private static let sbox: [UInt8] = [
        0x63, 0x7C, 0x77, 0x7B, 0xF2, 0x6B, 0x6F, 0xC5, 0x30, 0x01, 0x67, 0x2B, 0xFE, 0xD7, 0xAB, 0x76,
        0xCA, 0x82, 0xC9, 0x7D, 0xFA, 0x59, 0x47, 0xF0, 0xAD, 0xD4, 0xA2, 0xAF, 0x9C, 0xA4, 0x72, 0xC0,
        0xB7, 0xFD, 0x93, 0x26, 0x36, 0x3F, 0xF7, 0xCC, 0x34, 0xA5, 0xE5, 0xF1, 0x71, 0xD8, 0x31, 0x15,
        0x04, 0xC7, 0x23, 0xC3, 0x18, 0x96, 0x05, 0x9A, 0x07, 0x12, 0x80, 0xE2, 0xEB, 0x27, 0xB2, 0x75,
        0x09, 0x83, 0x2C, 0x1A, 0x1B, 0x6E, 0x5A, 0xA0, 0x52, 0x3B, 0xD6, 0xB3, 0x29, 0xE3, 0x2F, 0x84,
        0x53, 0xD1, 0x00, 0xED, 0x20, 0xFC, 0xB1, 0x5B, 0x6A, 0xCB, 0xBE, 0x39, 0x4A, 0x4C, 0x58, 0xCF,
        0xD0, 0xEF, 0xAA, 0xFB, 0x43, 0x4D, 0x33, 0x85, 0x45, 0xF9, 0x02, 0x7F, 0x50, 0x3C, 0x9F, 0xA8,
        0x51, 0xA3, 0x40, 0x8F, 0x92, 0x9D, 0x38, 0xF5, 0xBC, 0xB6, 0xDA, 0x21, 0x10, 0xFF, 0xF3, 0xD2,
        0xCD, 0x0C, 0x13, 0xEC, 0x5F, 0x97, 0x44, 0x17, 0xC4, 0xA7, 0x7E, 0x3D, 0x64, 0x5D, 0x19, 0x73,
        0x60, 0x81, 0x4F, 0xDC, 0x22, 0x2A, 0x90, 0x88, 0x46, 0xEE, 0xB8, 0x14, 0xDE, 0x5E, 0x0B, 0xDB,
        0xE0, 0x32, 0x3A, 0x0A, 0x49, 0x06, 0x24, 0x5C, 0xC2, 0xD3, 0xAC, 0x62, 0x91, 0x95, 0xE4, 0x79,
        0xE7, 0xC8, 0x37, 0x6D, 0x8D, 0xD5, 0x4E, 0xA9, 0x6C, 0x56, 0xF4, 0xEA, 0x65, 0x7A, 0xAE, 0x08,
        0xBA, 0x78, 0x25, 0x2E, 0x1C, 0xA6, 0xB4, 0xC6, 0xE8, 0xDD, 0x74, 0x1F, 0x4B, 0xBD, 0x8B, 0x8A,
        0x70, 0x3E, 0xB5, 0x66, 0x48, 0x03, 0xF6, 0x0E, 0x61, 0x35, 0x57, 0xB9, 0x86, 0xC1, 0x1D, 0x9E,
        0xE1, 0xF8, 0x98, 0x11, 0x69, 0xD9, 0x8E, 0x94, 0x9B, 0x1E, 0x87, 0xE9, 0xCE, 0x55, 0x28, 0xDF,
        0x8C, 0xA1, 0x89, 0x0D, 0xBF, 0xE6, 0x42, 0x68, 0x41, 0x99, 0x2D, 0x0F, 0xB0, 0x54, 0xBB, 0x16,
    ]
}
