/// What a lock adds to its scan response while a pairing window is open: manufacturer data
/// (company 0xFFFF, "LK", flags, the 16-octet fingerprint) so `latchkey phone pair` finds it by
/// a scan and lists it with its fingerprint (docs/PROTOCOL.md, "Advertising"). It is not
/// authenticated: the phone pins the fingerprint the owner confirmed, and only the lock holding
/// that identity's private key completes the key agreement, so a forged beacon wastes one
/// attempt (docs/SECURITY.md, "Pairing").
public struct PairingBeacon: Equatable, Sendable {
    static let header: [UInt8] = [0xFF, 0xFF, 0x4C, 0x4B]
    public static let windowOpenFlag: UInt8 = 1 << 0
    public static let fingerprintLength = 16
    public static let length = header.count + 1 + fingerprintLength

    public var fingerprint: [UInt8]

    public init(fingerprint: [UInt8]) {
        precondition(fingerprint.count == Self.fingerprintLength)
        self.fingerprint = fingerprint
    }

    /// Nil for any other manufacturer data (another vendor's, or a closed window).
    public init?(manufacturerData bytes: [UInt8]) {
        guard bytes.count == Self.length, Array(bytes.prefix(4)) == Self.header, bytes[4] == Self.windowOpenFlag else {
            return nil
        }
        fingerprint = Array(bytes[5...])
    }

    public var manufacturerData: [UInt8] { Self.header + [Self.windowOpenFlag] + fingerprint }

    /// The fingerprint as `latchkey pair` prints it: eight groups of four hex digits.
    public var fingerprintText: String { Self.text(ofFingerprint: fingerprint) }

    public static func text(ofFingerprint octets: [UInt8]) -> String {
        let hex = octets.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
        return stride(from: 0, to: hex.count - 1, by: 2).map { hex[$0] + hex[$0 + 1] }.joined(separator: "-")
    }
}
