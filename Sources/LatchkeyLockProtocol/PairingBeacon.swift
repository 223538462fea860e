/// What a lock adds to its advertising while a pairing window is open and takes a request:
/// manufacturer-specific data (AD type 0xFF) in its scan response, so that
/// `latchkey phone pair` finds it by a scan and lists it with its fingerprint, and nobody has
/// to type a Bluetooth address (docs/SECURITY.md, "Pairing").
///
///     0..1    company id 0xFFFF, little-endian (the Bluetooth SIG's id for tests and
///             internal use: this data is meant for Latchkey's own phones only)
///     2..3    "LK"
///     4       flags: bit 0 = a pairing window is open; other bits 0
///     5..20   the lock's fingerprint (16 octets: SHA-256 of its identity key, truncated)
///
/// It is not authenticated — anyone can advertise it. The phone pins the fingerprint the
/// owner confirmed, and the key agreement succeeds only with the lock that holds that
/// identity's private key; a forged beacon wastes a pairing attempt, nothing more.
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
