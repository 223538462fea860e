#if canImport(Glibc)
import Glibc
#endif

/// Sends `JournaldEntry`s to journald's native socket: one datagram each, so the fields arrive
/// structured (`journalctl -o json` shows LATCHKEY_EVENT=, KEY_ID=, …) and the priority is
/// the entry's (`journalctl -p warning`).
///
/// When the socket is missing or a send fails (journald restarting, a message too large for
/// one datagram), the entry goes to the fallback descriptor — the agent's stderr, which
/// under systemd is the journal's stream — as one line with an sd-daemon(3) `<N>` prefix:
/// the priority survives, the fields do not, nothing is lost.
///
/// Sendable (swift-log's handlers are): its state is fixed at init, and each `send` is one
/// sendto(2) or one write(2), which the kernel keeps whole across threads.
public final class JournaldSocket: @unchecked Sendable {
    public static let defaultPath = "/run/systemd/journal/socket"

    private let fd: CInt
    private var address = sockaddr_un()
    private let addressLength: socklen_t
    private let fallback: CInt

    public init(path: String = JournaldSocket.defaultPath, fallback: CInt = STDERR_FILENO) {
        self.fallback = fallback
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(MemoryLayout.size(ofValue: address.sun_path) - 1))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in bytes.enumerated() { raw[i] = byte }
        }
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
    }

    deinit { if fd >= 0 { close(fd) } }

    public func send(_ entry: JournaldEntry) {
        let datagram = entry.encoded
        let sent = fd >= 0 && datagram.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                    sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), sockaddrPointer, addressLength)
                }
            }
        } == datagram.count
        guard !sent else { return }
        writeLine(Self.prefixedLine(entry), to: fallback)
    }

    /// `<4>message`: the line journald's stream transport files at priority 4 (line breaks
    /// in the message are folded, one entry stays one line).
    public static func prefixedLine(_ entry: JournaldEntry) -> String {
        "<\(entry.priority.rawValue)>" + entry.message.replacing("\n", with: " ")
    }
}
