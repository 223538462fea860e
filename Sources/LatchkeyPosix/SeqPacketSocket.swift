/// A connected, non-blocking Unix `SOCK_SEQPACKET` socket: reliable, ordered, and with
/// message boundaries preserved, like an L2CAP channel. One `send` is one `receive`.
///
/// The socket owns its fd and closes it on `close()` or deinit.
public final class SeqPacketSocket {
    /// The fd, for `PosixEventLoop.watch`; -1 once closed.
    public private(set) var fileDescriptor: CInt

    init(fileDescriptor: CInt) { self.fileDescriptor = fileDescriptor }

    deinit { close() }

    /// Connects to a listener at `path`.
    public static func connect(to path: String) throws(SystemError) -> SeqPacketSocket {
        let socket = SeqPacketSocket(fileDescriptor: try Syscalls.seqPacketSocket())
        try Syscalls.connect(socket.fileDescriptor, path: path)
        return socket
    }

    /// Two connected sockets (socketpair(2)): a complete transport for tests.
    public static func pair() throws(SystemError) -> (SeqPacketSocket, SeqPacketSocket) {
        let (a, b) = try Syscalls.seqPacketPair()
        return (SeqPacketSocket(fileDescriptor: a), SeqPacketSocket(fileDescriptor: b))
    }

    public enum SendStatus: Equatable, Sendable {
        case sent
        /// The socket buffer is full (EAGAIN): nothing was sent; wait for writable readiness.
        case full
    }

    /// Sends `message` whole, or nothing. A closed peer is a `SystemError` (EPIPE).
    public func send(_ message: [UInt8]) throws(SystemError) -> SendStatus {
        switch try Syscalls.send(fileDescriptor, message) {
        case .done: .sent
        case .wouldBlock: .full
        }
    }

    public enum Received: Equatable, Sendable {
        case message([UInt8])
        /// Nothing to read now (EAGAIN): wait for readable readiness.
        case wouldBlock
        /// The peer closed its end. (A zero-length message reads the same way, so the
        /// protocols on these sockets never send empty messages.)
        case endOfStream
    }

    /// Receives one whole message; one longer than `maximumLength` is an EMSGSIZE error.
    public func receive(maximumLength: Int = SeqPacketSocket.defaultMaximumMessageLength) throws(SystemError) -> Received {
        switch try Syscalls.receive(fileDescriptor, capacity: maximumLength) {
        case .done(let bytes): bytes.isEmpty ? .endOfStream : .message(bytes)
        case .wouldBlock: .wouldBlock
        }
    }

    /// Large enough for any message our protocols send (an ATT PDU is at most 517 bytes,
    /// Core Vol 3 Part F 3.2.9, plus framing; a device listing is a few KiB); our choice.
    public static let defaultMaximumMessageLength = 64 * 1024

    public var isOpen: Bool { fileDescriptor >= 0 }

    public func close() {
        guard fileDescriptor >= 0 else { return }
        Syscalls.close(fileDescriptor)
        fileDescriptor = -1
    }
}

/// A listening `SOCK_SEQPACKET` socket bound to a filesystem path.
public final class SeqPacketListener {
    public let path: String
    public private(set) var fileDescriptor: CInt

    /// Binds and listens on `path`. A stale socket file left by a dead process (nobody
    /// accepts on it: connect is refused) is replaced; a live one, or any other kind of
    /// file, is `EADDRINUSE`.
    public init(path: String, backlog: CInt = 16) throws(SystemError) {
        self.path = path
        fileDescriptor = try Syscalls.seqPacketSocket()
        do {
            try Self.bindReplacingStale(fileDescriptor, path: path)
            try Syscalls.listen(fileDescriptor, backlog: backlog)
        } catch {
            Syscalls.close(fileDescriptor)
            fileDescriptor = -1
            throw error
        }
    }

    deinit { close() }

    private static func bindReplacingStale(_ fd: CInt, path: String) throws(SystemError) {
        do throws(SystemError) {
            try Syscalls.bind(fd, path: path)
        } catch where error.errno == .addressInUse && isStale(path) {
            Syscalls.unlink(path)
            try Syscalls.bind(fd, path: path)
        }
    }

    /// A socket file nobody listens on any more (connecting is refused).
    private static func isStale(_ path: String) -> Bool {
        // No probe socket (out of descriptors): not known to be stale, so the caller's EADDRINUSE stands and is reported.
        guard Syscalls.isSocket(path), let probe = try? Syscalls.seqPacketSocket() else { return false }
        defer { Syscalls.close(probe) }
        do throws(SystemError) {
            try Syscalls.connect(probe, path: path)
            return false
        } catch {
            return error.errno == .connectionRefused
        }
    }

    /// Accepts one pending connection, or nil when none is waiting.
    public func accept() throws(SystemError) -> SeqPacketSocket? {
        switch try Syscalls.accept(fileDescriptor) {
        case .done(let fd): SeqPacketSocket(fileDescriptor: fd)
        case .wouldBlock: nil
        }
    }

    /// Stops listening and removes the socket file.
    public func close() {
        guard fileDescriptor >= 0 else { return }
        Syscalls.close(fileDescriptor)
        fileDescriptor = -1
        Syscalls.unlink(path)
    }
}
