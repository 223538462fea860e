/// The name a phone proposes for its key (or the owner gives it): shown in `latchkey pair`,
/// the journal and `keys list`, so it must never carry a terminal escape, a newline or a
/// character that rearranges the text around it (a bidirectional override).
///
/// Accepted: at most `maximumLength` UTF-8 octets of printable characters — no scalar whose
/// Unicode general category is a control (C0, C1, DEL; ESC begins every terminal escape), a
/// format character (U+202E and the other bidi controls, zero-width joiners), a line or
/// paragraph separator, private use, a surrogate or unassigned.
public enum PairingName {
    public static let maximumLength = 32

    /// Why `name` is refused, or nil when it is acceptable.
    public static func problem(_ name: String) -> String? {
        if name.utf8.count > maximumLength { return "longer than \(maximumLength) octets" }
        if let bad = name.unicodeScalars.first(where: { !isPrintable($0) }) {
            return "contains the non-printable character U+\(hex(bad.value))"
        }
        return nil
    }

    /// `name` made safe to print: every non-printable scalar as `\u{…}`, a backslash doubled.
    /// For names stored before they were validated (or written into the store by hand).
    public static func escaped(_ name: String) -> String {
        var out = ""
        for s in name.unicodeScalars {
            if s == "\\" { out += "\\\\" } else if isPrintable(s) { out.unicodeScalars.append(s) } else {
                out += "\\u{\(hex(s.value))}"
            }
        }
        return out
    }

    static func isPrintable(_ s: Unicode.Scalar) -> Bool {
        switch s.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned: false
        default: true
        }
    }

    static func hex(_ v: UInt32) -> String {
        let h = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - h.count)) + h
    }
}
