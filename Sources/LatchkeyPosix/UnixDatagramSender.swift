#if canImport(Glibc)
import Glibc
#endif

/// Sends datagrams to one AF_UNIX SOCK_DGRAM address: sd_notify's `$NOTIFY_SOCKET` and
/// journald's native socket. Each send names the address (sendto(2)), so a server that
/// restarts and binds its socket anew is reached again. A name starting with `@` is in the
/// abstract namespace (the `@` stands for a leading NUL byte, as in systemd's sd_notify,
/// src/libsystemd/sd-daemon/sd-daemon.c).
/// `waits: false` never blocks (MSG_DONTWAIT): a server that does not keep up gets `false`,
/// and the caller decides what to do with the message. Sendable: its state is fixed at
/// init, and one sendto(2) is one whole datagram whatever the thread.
public final class UnixDatagramSender: @unchecked Sendable {
    public let path: String
    private let fd: CInt
    private let address: sockaddr_un
    private let addressLength: socklen_t
    private let flags: Int32
    /// The address's bytes as sun_path holds them (a leading NUL for the abstract namespace).
    private let name: [UInt8]

    /// nil when `path` cannot be a socket address (empty, relative, too long) or no socket
    /// can be made.
    public init?(path: String, waits: Bool = true) {
        var name = Array(path.utf8)
        guard name.first == UInt8(ascii: "/") || name.first == UInt8(ascii: "@") else { return nil }
        if name.first == UInt8(ascii: "@") { name[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count < capacity || (name.first == 0 && name.count <= capacity) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in name.enumerated() { raw[i] = byte }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        self.path = path
        self.name = name
        self.fd = fd
        self.address = address
        flags = Int32(MSG_NOSIGNAL) | (waits ? 0 : Int32(MSG_DONTWAIT))
        // Abstract names are exactly their bytes long; paths carry their terminating NUL.
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + name.count + (name.first == 0 ? 0 : 1))
    }

    deinit { Syscalls.close(fd) }

    /// One datagram carrying a copy of `descriptor` (SCM_RIGHTS): sd_notify's FDSTORE=1.
    public func send(_ message: [UInt8], passing descriptor: CInt) throws(SystemError) {
        try Syscalls.send(message, passing: descriptor, on: fd, to: name)
    }

    /// Whether the whole datagram was sent.
    public func send(_ message: [UInt8]) -> Bool {
        var address = address
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                message.withUnsafeBytes {
                    sendto(fd, $0.baseAddress, $0.count, flags, sa, addressLength)
                }
            }
        }
        return sent == message.count
    }
}
