#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import LatchkeySettings

/// Prints agent timeline events on standard output, one line each, flushed at once so a
/// supervisor (the demo, the HIL) sees them as they happen. Under systemd
/// (`JournaldStream.isConnected`) each goes to journald instead, as one structured entry
/// with its priority (`AgentEvent.journaldEntry`) — not both, or every event would be twice
/// in the journal.
public final class EventPrinter: AgentEventSink {
    let format: EventFormat
    let prefix: String
    /// Where the lines go; nil prints nothing (a daemon set up in a test only reports).
    let output: CInt?
    /// journald's socket, under systemd.
    let journal: JournaldSocket?
    /// Also keeps the events, for callers that want to inspect what was printed.
    public var onEvent: ((AgentEvent) -> Void)?

    public init(format: EventFormat, prefix: String = "", output: CInt? = STDOUT_FILENO, journal: JournaldSocket? = nil) {
        self.format = format
        self.prefix = prefix
        self.output = output
        self.journal = journal
    }

    /// The agents' printer: to journald when stdout is the journal's stream, else to stdout.
    public static func forAgent(format: EventFormat) -> EventPrinter {
        let journal = JournaldStream.isConnected(fd: STDOUT_FILENO) ? JournaldSocket(fallback: STDOUT_FILENO) : nil
        return EventPrinter(format: format, journal: journal)
    }

    public func emit(_ event: AgentEvent) {
        if let journal {
            journal.send(event.journaldEntry())
            onEvent?(event)
            return
        }
        let line: String
        switch format {
        case .json:
            line = event.jsonLine
        case .text:
            let secs = Double(event.time.nanoseconds) / 1e9
            let fields = event.fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
            line = prefix + String(format3(secs)) + " " + event.name + (fields.isEmpty ? "" : " " + fields)
        }
        if let output { writeLine(line, to: output) }
        onEvent?(event)
    }
}

/// Seconds with three decimals, without Foundation.
package func format3(_ x: Double) -> String { formatFixed(x, decimals: 3) }

/// `x` rounded to `decimals` (1...) decimals, without Foundation's String(format:).
package func formatFixed(_ x: Double, decimals: Int) -> String {
    let scale = (0..<decimals).reduce(Int64(1)) { r, _ in r * 10 }
    let scaled = Int64((x * Double(scale)).rounded())
    let whole = scaled / scale, frac = String(abs(scaled % scale))
    return "\(whole)." + String(repeating: "0", count: decimals - frac.count) + frac
}

/// Prints a line on standard output at once (a pipe to a supervisor would otherwise
/// buffer it until exit).
public func printLine(_ line: String) { writeLine(line, to: STDOUT_FILENO) }

/// Writes a line to standard error (the CLI's error messages). Under systemd (stderr is the
/// journal's stream) each line carries sd-daemon's `<N>` prefix, `<3>` unless told: journald
/// files it at that priority (err), where `journalctl -p warning` finds it, not at the
/// stream's default, info. One prefix only: journald reads the first, and a second would
/// stay in the message (`gave-up`'s crit alert was filed at err as "<2>ALERT: …" so).
public func printErrorLine(_ line: String, priority: JournaldEntry.Priority = .error) {
    for part in errorStreamLines(line, priority: priority, toJournal: errorsGoToJournal) { writeLine(part, to: STDERR_FILENO) }
}

/// `printErrorLine`'s lines: one per line of `line`, each with the priority prefix when
/// standard error is the journal's stream.
package func errorStreamLines(_ line: String, priority: JournaldEntry.Priority, toJournal: Bool) -> [String] {
    let prefix = toJournal ? "<\(priority.rawValue)>" : ""
    return line.split(separator: "\n", omittingEmptySubsequences: false).map { prefix + $0 }
}

/// Read once: the environment and stderr do not change under a running process.
private let errorsGoToJournal = JournaldStream.isConnected(fd: STDERR_FILENO)

/// Writes a whole line with write(2): unbuffered, so nothing is lost to a SIGKILL.
package func writeLine(_ line: String, to fd: CInt) {
    var bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return }
        offset += n
    }
}
