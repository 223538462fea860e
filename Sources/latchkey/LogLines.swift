#if canImport(Glibc)
import Glibc
#endif
import LatchkeyStore

/// One audit-log entry as `latchkey log` and `latchkey status` print it: sequence, local
/// wall time (the event's own time is on the lock's monotonic clock, which a reader cannot
/// place), and the event in words.
enum LogLines {
    static func line(_ entry: LoggedEvent) -> String {
        "#\(entry.sequence)  \(wallTime(entry.wallNanos))  \(entry.event.summary)"
    }

    /// `YYYY-MM-DD HH:MM:SS` in the local time zone.
    static func wallTime(_ nanos: Int64) -> String {
        var seconds = time_t(nanos / 1_000_000_000)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return "\(nanos / 1_000_000_000)s" }
        var buffer = [CChar](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S", &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
