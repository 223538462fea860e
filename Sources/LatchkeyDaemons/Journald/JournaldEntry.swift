/// One entry for systemd-journald, in its native protocol (systemd.journal-fields(7),
/// "Native Journal Protocol"): `FIELD=value\n` per field, or — for a value holding a line
/// break — `FIELD\n`, its length as 64-bit little-endian, the bytes, `\n`.
///
/// journald stamps each entry with its own time (`__REALTIME_TIMESTAMP`), so the agents add
/// none of theirs: a message carries no timestamp.
public struct JournaldEntry: Equatable, Sendable {
    /// syslog(3) levels, as journald's PRIORITY= and `journalctl -p` read them.
    public enum Priority: Int, Sendable, Comparable, CaseIterable {
        case emergency = 0, alert, critical, error, warning, notice, info, debug
        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }

    public var priority: Priority
    public var message: String
    /// Further fields, in order: names as `fieldName` made them.
    public var fields: [(String, String)]

    public init(_ priority: Priority, _ message: String, fields: [(String, String)] = []) {
        self.priority = priority; self.message = message; self.fields = fields
    }

    public static func == (a: Self, b: Self) -> Bool { a.encoded == b.encoded }

    public func field(_ name: String) -> String? { fields.first { $0.0 == name }?.1 }

    /// The datagram journald reads.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        for (name, value) in [("PRIORITY", "\(priority.rawValue)"), ("MESSAGE", message)] + fields {
            out += Array(name.utf8)
            let bytes = Array(value.utf8)
            if bytes.contains(0x0A) {
                out.append(0x0A)
                var length = UInt64(bytes.count).littleEndian
                withUnsafeBytes(of: &length) { out += $0 }
                out += bytes
            } else {
                out.append(0x3D)  // "="
                out += bytes
            }
            out.append(0x0A)
        }
        return out
    }

    /// A journal field name from any key: upper case, letters, digits and `_` only, not
    /// starting with a digit or `_` (those are journald's own, trusted fields), at most 64
    /// characters. `transport` → `TRANSPORT`, `retry-in` → `RETRY_IN`.
    public static func fieldName(_ key: String, prefix: String = "") -> String {
        var name = prefix
        for scalar in key.unicodeScalars {
            switch scalar {
            case "a"..."z": name.unicodeScalars.append(Unicode.Scalar(scalar.value - 32)!)
            case "A"..."Z", "0"..."9", "_": name.unicodeScalars.append(scalar)
            default: name += "_"
            }
        }
        while let first = name.unicodeScalars.first, first == "_" || ("0"..."9").contains(first) {
            name.unicodeScalars.removeFirst()
        }
        return String(name.prefix(64)).isEmpty ? "FIELD" : String(name.prefix(64))
    }
}
