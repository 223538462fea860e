#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix

/// Sends `JournaldEntry`s to journald's native socket, one datagram each, so the fields arrive
/// structured and the priority is the entry's. When the socket is missing or a send fails, the
/// entry goes to the fallback descriptor (stderr, the journal's stream under systemd) as one
/// line with an sd-daemon(3) `<N>` prefix: the priority survives, nothing is lost. Sendable:
/// its state is fixed at init, and each `send` is one sendto(2) or write(2).
public final class JournaldSocket: Sendable {
    public static let defaultPath = "/run/systemd/journal/socket"

    private let sender: UnixDatagramSender?
    private let fallback: CInt

    /// `fallback` is where a line goes when a datagram cannot be sent.
    public init(path: String = JournaldSocket.defaultPath, fallback: CInt = STDERR_FILENO) {
        self.fallback = fallback
        // Never waits for journald: an entry it cannot take now goes to the stream instead.
        sender = UnixDatagramSender(path: path, waits: false)
    }

    public func send(_ entry: JournaldEntry) {
        if let sender, sender.send(entry.encoded) { return }
        writeLine(Self.prefixedLine(entry), to: fallback)
    }

    /// `<4>message`: the line journald's stream transport files at priority 4 (line breaks
    /// in the message are folded, one entry stays one line).
    public static func prefixedLine(_ entry: JournaldEntry) -> String {
        "<\(entry.priority.rawValue)>" + entry.message.replacing("\n", with: " ")
    }
}
