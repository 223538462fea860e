#if canImport(Glibc)
import Glibc
import LatchkeyDaemons
#endif

/// Wall-clock times as the inspection commands print and read them (nanoseconds since the
/// Unix epoch, the store's `wallNanos`), with libc's calendar, without Foundation.
public enum WallTime {
    /// `YYYY-MM-DD HH:MM:SS` in the local time zone, for people.
    public static func local(_ nanos: Int64) -> String {
        format(nanos, "%Y-%m-%d %H:%M:%S", local: true)
    }

    /// ISO 8601 in UTC (`2026-11-24T12:00:05Z`), for scripts.
    public static func utc(_ nanos: Int64) -> String {
        format(nanos, "%Y-%m-%dT%H:%M:%SZ", local: false)
    }

    private static func format(_ nanos: Int64, _ pattern: String, local: Bool) -> String {
        var seconds = time_t(nanos / 1_000_000_000)
        var parts = tm()
        guard (local ? localtime_r(&seconds, &parts) : gmtime_r(&seconds, &parts)) != nil else { return "\(nanos / 1_000_000_000)s" }
        var buffer = [CChar](repeating: 0, count: 40)
        let count = strftime(&buffer, buffer.count, pattern, &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `log --since`: `30s`, `15m`, `2h`, `7d` before `nowNanos`; `YYYY-MM-DD`, or with
    /// ` HH:MM` / ` HH:MM:SS` (or `T` between), in the local time zone; `@SECONDS` since the
    /// epoch. nil when it is none of these.
    public static func parseSince(_ text: String, nowNanos: Int64) -> Int64? {
        if text.hasPrefix("@"), let seconds = Int64(text.dropFirst()) { return nanoseconds(seconds, 1) }
        if let unit = text.last, let count = Int64(text.dropLast()), count >= 0 {
            let seconds: Int64? = switch unit {
            case "s": 1
            case "m": 60
            case "h": 3600
            case "d": 86400
            default: nil
            }
            if let seconds, let span = nanoseconds(count, seconds) { return nowNanos - span }
        }
        guard let fields = calendarFields(text) else { return nil }
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (fields[0] - 1900, fields[1] - 1, fields[2])
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (fields[3], fields[4], fields[5])
        parts.tm_isdst = -1  // let mktime decide daylight saving time
        let seconds = mktime(&parts)
        guard seconds != -1 else { return nil }
        return Int64(seconds) * 1_000_000_000
    }

    /// `count` × `unit` seconds in nanoseconds; nil when it overflows (a typo like `99999999999d`).
    private static func nanoseconds(_ count: Int64, _ unit: Int64) -> Int64? {
        let (seconds, overflow) = count.multipliedReportingOverflow(by: unit)
        let (nanos, overflow2) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow || overflow2 ? nil : nanos
    }

    /// `YYYY-MM-DD[( |T)HH:MM[:SS]]` as year, month, day, hour, minute, second, each in its
    /// calendar range; the whole text must match. (Glibc's strptime is not visible to Swift.)
    static func calendarFields(_ text: String) -> [Int32]? {
        let bytes = Array(text.utf8)
        // Digit counts and the separator after each field.
        let layout: [(digits: Int, separator: [UInt8])] = [(4, [0x2D]), (2, [0x2D]), (2, [0x20, 0x54]), (2, [0x3A]), (2, [0x3A]), (2, [])]
        let ranges: [ClosedRange<Int32>] = [1970...9999, 1...12, 1...31, 0...23, 0...59, 0...60]
        var fields: [Int32] = []
        var index = 0
        for (position, (digits, separator)) in layout.enumerated() {
            guard index + digits <= bytes.count else { return nil }
            var value: Int32 = 0
            for byte in bytes[index..<(index + digits)] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int32(byte - 0x30)
            }
            guard ranges[position].contains(value) else { return nil }
            fields.append(value)
            index += digits
            if index == bytes.count {
                // A date alone, or a date with hours and minutes (seconds optional).
                guard position == 2 || position >= 4 else { return nil }
                return fields + Array(repeating: 0, count: 6 - fields.count)
            }
            guard separator.contains(bytes[index]) else { return nil }
            index += 1
        }
        return nil
    }
}
