#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims

/// Every C call LatchkeyPosix makes, under the one errno policy (`ErrnoPolicy`, shared
/// with LatchkeyKernel; swift-system's `Internals/Syscalls.swift`).
enum Syscalls {
    static func call(_ name: @autoclosure () -> String, _ body: () -> Int) throws(SystemError) -> IOResult<Int> {
        try ErrnoPolicy.call(name(), body)
    }

    static func blocking(_ name: @autoclosure () -> String, _ body: () -> Int) throws(SystemError) -> Int {
        try ErrnoPolicy.blocking(name(), body)
    }

    static func errorString(_ code: CInt) -> String { String(cString: strerror(code)) }

    // MARK: Time and polling

    static func monotonicNanoseconds() -> Int64 { latchkey_monotonic_ns() }

    static func mallocInUse() -> Int64 { Int64(clamping: latchkey_malloc_in_use()) }

    /// One poll entry: fd, requested events, returned events.
    struct PollEntry {
        var fd: CInt
        var events: Int16
        var revents: Int16 = 0
    }
    static let pollIn = Int16(POLLIN), pollOut = Int16(POLLOUT)
    static let pollHangUp = Int16(POLLHUP), pollError = Int16(POLLERR | POLLNVAL)

    /// ppoll with a nanosecond timeout (nil waits forever); fills `revents`.
    static func poll(_ entries: inout [PollEntry], timeoutNanoseconds: Int64?) throws(SystemError) -> Int {
        var fds = entries.map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
        let timeout = timeoutNanoseconds.map { max(0, $0) } ?? -1
        let ready = try blocking("ppoll") {
            Int(fds.withUnsafeMutableBufferPointer { latchkey_ppoll($0.baseAddress, UInt($0.count), timeout) })
        }
        for i in entries.indices { entries[i].revents = fds[i].revents }
        return ready
    }

    // MARK: CPU scheduling

    static func enterFIFO(priority: CInt) throws(SystemError) {
        _ = try blocking("sched_setscheduler") { Int(latchkey_sched_fifo(priority)) }
    }

    static func forbidRealtime() throws(SystemError) {
        _ = try blocking("setrlimit(RLIMIT_RTPRIO, 0)") { Int(latchkey_forbid_realtime()) }
    }

    static func scheduling(of pid: CInt) throws(SystemError) -> (policy: CInt, priority: CInt) {
        var priority: CInt = 0
        let policy = try blocking("sched_getscheduler(\(pid))") { Int(latchkey_sched_current(pid, &priority)) }
        return (CInt(policy), priority)
    }

    // MARK: File descriptors

    static func pipe() throws(SystemError) -> (read: CInt, write: CInt) {
        var fds: [CInt] = [-1, -1]
        _ = try blocking("pipe2") { Int(fds.withUnsafeMutableBufferPointer { latchkey_pipe_nonblocking($0.baseAddress) }) }
        return (fds[0], fds[1])
    }

    /// Reads up to `capacity` bytes; an empty array is end of file.
    static func read(_ fd: CInt, capacity: Int) throws(SystemError) -> IOResult<[UInt8]> {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let result = try call("read") { buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
        guard case .done(let n) = result else { return .wouldBlock }
        return .done(Array(buffer.prefix(n)))
    }

    /// One datagram to the AF_UNIX address `name` (its bytes; a leading NUL is the abstract
    /// namespace) carrying a copy of `fd` (SCM_RIGHTS).
    static func send(_ message: [UInt8], passing fd: CInt, on socket: CInt, to name: [UInt8]) throws(SystemError) {
        let sent = try blocking("sendmsg(SCM_RIGHTS)") {
            name.withUnsafeBufferPointer { address in
                message.withUnsafeBytes { body in
                    address.withMemoryRebound(to: CChar.self) {
                        Int(latchkey_send_with_fd(socket, $0.baseAddress, UInt($0.count), body.baseAddress, UInt(body.count), fd))
                    }
                }
            }
        }
        if sent != message.count { throw SystemError(.messageTooLong, call: "sendmsg(\(sent) of \(message.count) bytes)") }
    }

    static func setCloseOnExec(_ fd: CInt) throws(SystemError) {
        _ = try blocking("fcntl(F_SETFD, FD_CLOEXEC)") { Int(latchkey_set_cloexec(fd)) }
    }

    static func isCloseOnExec(_ fd: CInt) throws(SystemError) -> Bool {
        try blocking("fcntl(F_GETFD)") { Int(latchkey_get_cloexec(fd)) } == 1
    }

    /// A second descriptor for the same open file, close-on-exec.
    static func duplicate(_ fd: CInt) throws(SystemError) -> CInt {
        CInt(try blocking("fcntl(F_DUPFD_CLOEXEC)") { Int(fcntl(fd, F_DUPFD_CLOEXEC, 0)) })
    }

    // MARK: Memory files (memfd)

    static func createMemoryFile(name: String) throws(SystemError) -> CInt {
        CInt(try blocking("memfd_create(\(name))") { Int(latchkey_memfd_create(name)) })
    }

    static func resize(_ fd: CInt, to size: Int) throws(SystemError) {
        _ = try blocking("ftruncate(\(size))") { Int(ftruncate(fd, off_t(size))) }
    }

    static func sealSize(_ fd: CInt) throws(SystemError) {
        _ = try blocking("fcntl(F_ADD_SEALS)") { Int(latchkey_seal_size(fd)) }
    }

    static func isSizeSealed(_ fd: CInt) throws(SystemError) -> Bool {
        try blocking("fcntl(F_GET_SEALS)") { Int(latchkey_is_size_sealed(fd)) } == 1
    }

    static func fileSize(_ fd: CInt) throws(SystemError) -> Int {
        var info = stat()
        _ = try blocking("fstat") { Int(fstat(fd, &info)) }
        return Int(info.st_size)
    }

    /// One pwrite(2) of all of `bytes` at `offset`; a short write is an error (a memfd never makes one).
    static func write(_ fd: CInt, _ bytes: [UInt8], at offset: Int) throws(SystemError) {
        let written = try blocking("pwrite(\(bytes.count) bytes)") {
            bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        }
        if written != bytes.count { throw SystemError(.noBufferSpace, call: "pwrite(\(written) of \(bytes.count) bytes)") }
    }

    static func read(_ fd: CInt, count: Int, at offset: Int) throws(SystemError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let n = try blocking("pread(\(count) bytes)") {
            buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
        }
        return Array(buffer.prefix(n))
    }

    static func close(_ fd: CInt) {
        _ = Glibc.close(fd)  // never retried: Linux has released the fd even on EINTR
    }

    static func unlink(_ path: String) { _ = Glibc.unlink(path) }

    /// Whether `path` names a socket file (lstat; never follows a link).
    static func isSocket(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        return info.st_mode & S_IFMT == S_IFSOCK
    }

    /// Whether the file system holding `path` is mounted read-only (statvfs ST_RDONLY); nil
    /// when it cannot be asked.
    static func isOnReadOnlyFileSystem(_ path: String) -> Bool? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return info.f_flag & UInt(ST_RDONLY) != 0
    }

    // MARK: Directories and environment

    static func makeTemporaryDirectory(template: String) throws(SystemError) -> String {
        var bytes = Array(template.utf8CString)
        _ = try blocking("mkdtemp(\(template))") {
            bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) == nil ? -1 : 0 }
        }
        return String(decoding: bytes.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func makeDirectory(_ path: String, mode: UInt32) throws(SystemError) {
        _ = try blocking("mkdir(\(path))") { Int(mkdir(path, mode)) }
    }

    /// Names in a directory, without "." and "..".
    static func directoryEntries(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func removeDirectory(_ path: String) { _ = rmdir(path) }

    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(validatingCString: value)
    }

    static func userID() -> UInt32 { getuid() }

    // MARK: Unix SOCK_SEQPACKET sockets

    static let seqPacketType = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)

    static func seqPacketSocket() throws(SystemError) -> CInt {
        CInt(try blocking("socket(AF_UNIX, SOCK_SEQPACKET)") { Int(socket(AF_UNIX, seqPacketType, 0)) })
    }

    static func seqPacketPair() throws(SystemError) -> (CInt, CInt) {
        var fds: [CInt] = [-1, -1]
        _ = try blocking("socketpair(AF_UNIX, SOCK_SEQPACKET)") {
            Int(fds.withUnsafeMutableBufferPointer { socketpair(AF_UNIX, seqPacketType, 0, $0.baseAddress) })
        }
        return (fds[0], fds[1])
    }

    static func bind(_ fd: CInt, path: String) throws(SystemError) {
        _ = try blocking("bind(\(path))") { Int(latchkey_unix_bind(fd, path)) }
    }

    static func listen(_ fd: CInt, backlog: CInt) throws(SystemError) {
        _ = try blocking("listen") { Int(Glibc.listen(fd, backlog)) }
    }

    static func accept(_ fd: CInt) throws(SystemError) -> IOResult<CInt> {
        switch try call("accept4", { Int(latchkey_accept_nonblocking(fd)) }) {
        case .done(let client): return .done(CInt(client))
        case .wouldBlock: return .wouldBlock
        }
    }

    /// A TCP port on 127.0.0.1 that nobody listens on now: bind to port 0, read what the
    /// kernel chose, close (for a broker a test or the demo starts; it may be taken again
    /// before that broker binds it, which then fails to start and says so).
    static func freeLoopbackPort() throws(SystemError) -> Int {
        let fd = CInt(try blocking("socket(AF_INET)") { Int(socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)) })
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = try blocking("bind(127.0.0.1:0)") {
            Int(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) } })
        }
        _ = try blocking("getsockname") {
            Int(withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.getsockname(fd, $0, &length) }
            })
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Who connected (SO_PEERCRED): fixed at connect(2), so a peer cannot change it afterwards.
    static func peerCredentials(_ fd: CInt) throws(SystemError) -> PeerCredentials {
        var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
        _ = try blocking("getsockopt(SO_PEERCRED)") { Int(latchkey_peer_credentials(fd, &pid, &uid, &gid)) }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }

    /// Connecting an AF_UNIX socket completes at once or fails (EAGAIN: the listener's
    /// backlog is full, reported as an error since there is no "in progress" here).
    static func connect(_ fd: CInt, path: String) throws(SystemError) {
        _ = try blocking("connect(\(path))") { Int(latchkey_unix_connect(fd, path)) }
    }

    /// Sends one whole message; MSG_NOSIGNAL turns a closed peer into EPIPE, not SIGPIPE.
    static func send(_ fd: CInt, _ message: [UInt8]) throws(SystemError) -> IOResult<Int> {
        try call("send") {
            message.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        }
    }

    /// Receives one whole message. MSG_TRUNC makes Linux (>= 3.4 for SEQPACKET) return
    /// the real length, so a message larger than `capacity` is detected, not cut silently.
    static func receive(_ fd: CInt, capacity: Int) throws(SystemError) -> IOResult<[UInt8]> {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let result = try call("recv") {
            buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_TRUNC | MSG_DONTWAIT)) }
        }
        guard case .done(let n) = result else { return .wouldBlock }
        if n > capacity { throw SystemError(.messageTooLong, call: "recv(\(n) > \(capacity) bytes)") }
        return .done(Array(buffer.prefix(n)))
    }

    // MARK: Secret files

    /// A new file only: O_CREAT|O_EXCL (never an existing file, never through a link another
    /// user planted) and O_NOFOLLOW, with `mode` from the start (no window at 0644).
    static func createExclusive(_ path: String, mode: UInt32) throws(SystemError) -> CInt {
        CInt(try blocking("open(\(path), O_CREAT|O_EXCL|O_NOFOLLOW)") {
            Int(open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(mode)))
        })
    }

    static func openDirectory(_ path: String) throws(SystemError) -> CInt {
        CInt(try blocking("open(\(path), O_DIRECTORY)") { Int(open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) })
    }

    /// Writes all of `bytes` (a short write continues; EINTR is retried by the policy).
    static func writeAll(_ fd: CInt, _ bytes: [UInt8], path: String) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let n = try blocking("write(\(path))") {
                bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            }
            offset += n
        }
    }

    static func fsync(_ fd: CInt, path: String) throws(SystemError) {
        _ = try blocking("fsync(\(path))") { Int(Glibc.fsync(fd)) }
    }

    static func rename(_ from: String, _ to: String) throws(SystemError) {
        _ = try blocking("rename(\(from), \(to))") { Int(Glibc.rename(from, to)) }
    }

    /// lstat's file type and permission bits; nil when `path` does not exist.
    static func fileMode(_ path: String) throws(SystemError) -> (mode: UInt32, isRegular: Bool)? {
        var info = stat()
        do throws(SystemError) {
            _ = try blocking("lstat(\(path))") { Int(lstat(path, &info)) }
        } catch where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        return (UInt32(info.st_mode) & 0o7777, info.st_mode & S_IFMT == S_IFREG)
    }

    static func isTerminal(_ fd: CInt) -> Bool { isatty(fd) == 1 }

    /// fflush(NULL), every output stream (naming `stdout` is a global Swift 6 refuses): a
    /// line printed to a pipe or a file reaches it now, not at exit.
    static func flushStandardOutput() { _ = fflush(nil) }

    // MARK: Signals

    static func forwardSignal(_ signo: CInt, to writeFD: CInt) throws(SystemError) {
        _ = try blocking("sigaction(\(signo))") { Int(latchkey_signal_forward(signo, writeFD)) }
    }

    static func restoreSignal(_ signo: CInt) {
        _ = latchkey_signal_restore(signo)
    }

    static func raise(_ signo: CInt) { _ = Glibc.raise(signo) }
}
