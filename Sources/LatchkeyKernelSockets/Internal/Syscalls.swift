#if canImport(Glibc)
import Glibc
#endif
import CBluetooth
import CLinuxShims
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Every C call of the kernel transport: sockets (mgmt, L2CAP, raw HCI) and libbluetooth
/// structures, each under the one errno policy (`ErrnoPolicy`: EINTR retried, EAGAIN is
/// `.wouldBlock`, EBADF/EFAULT trap) and each behind the mocking hook of debug builds
/// (`SyscallMock`), keyed by the C function's name: `call`, `blocking` and `pointer` come from
/// LatchkeyPosix's `SyscallNamespace`. Callers turn the `SystemError` into their own typed error
/// (`KernelError`, which makes EAFNOSUPPORT "no Bluetooth").
package enum Syscalls: SyscallNamespace {
    package static func close(_ fd: CInt) {
        _ = Glibc.close(fd)  // never retried: Linux has released the fd even on EINTR
    }

    // MARK: Socket I/O (mgmt and ATT sockets alike: one message per call)

    package static let messageFlags = Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)

    /// Sends one whole message without blocking; `.wouldBlock` when the socket buffer is full.
    package static func send(_ fd: CInt, _ message: [UInt8]) throws(SystemError) -> IOResult<Int> {
        try call("send") { message.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, messageFlags) } }
    }

    /// Receives one whole message; an empty array is end of stream. MSG_TRUNC makes the
    /// kernel return the real length, so a message longer than `capacity` is an EMSGSIZE
    /// error rather than silently cut.
    package static func receive(_ fd: CInt, capacity: Int) throws(SystemError) -> IOResult<[UInt8]> {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let result = try call("recv") {
            buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_TRUNC)) }
        }
        guard case .done(let n) = result else { return .wouldBlock }
        if n > capacity { throw SystemError(.messageTooLong, call: "recv(\(n) > \(capacity) bytes)") }
        return .done(Array(buffer.prefix(n)))
    }

    /// The same into `buffer`, reused from message to message (an ATT link's per-request
    /// path: no allocation and no zeroing of its capacity per call); returns the length.
    package static func receive(_ fd: CInt, into buffer: inout [UInt8]) throws(SystemError) -> IOResult<Int> {
        let capacity = buffer.count
        let result = try call("recv") {
            buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_TRUNC)) }
        }
        guard case .done(let n) = result else { return .wouldBlock }
        if n > capacity { throw SystemError(.messageTooLong, call: "recv(\(n) > \(capacity) bytes)") }
        return .done(n)
    }

    /// A connected pair of non-blocking SOCK_SEQPACKET sockets: the test transport for
    /// mgmt and ATT alike (both keep message boundaries).
    package static func seqPacketPair() throws(SystemError) -> (CInt, CInt) {
        var fds: [CInt] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        _ = try blocking("socketpair") {
            Int(fds.withUnsafeMutableBufferPointer { socketpair(AF_UNIX, type, 0, $0.baseAddress) })
        }
        return (fds[0], fds[1])
    }

    /// The pending error of a socket whose non-blocking connect has finished (SO_ERROR).
    package static func socketError(_ fd: CInt) throws(SystemError) -> Errno? {
        var value: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        _ = try blocking("getsockopt", "(SO_ERROR)") { Int(getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length)) }
        return value == 0 ? nil : Errno(rawValue: value)
    }

    // MARK: Bluetooth sockets

    private static let nonBlocking = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)

    /// The mgmt socket: raw HCI, bound to no device (HCI_DEV_NONE) on HCI_CHANNEL_CONTROL
    /// (mgmt-api.txt, "Example"). EAFNOSUPPORT here means the kernel has no Bluetooth.
    package static func mgmtSocket() throws(SystemError) -> CInt {
        try hciSocket(device: UInt16(HCI_DEV_NONE), channel: UInt16(HCI_CHANNEL_CONTROL), "HCI_CHANNEL_CONTROL")
    }

    /// A raw HCI socket bound to controller `device` on HCI_CHANNEL_RAW, receiving copies of
    /// that controller's HCI events: only those of `events` (event codes), and of Command
    /// Complete/Status only those for `opcode` (the kernel's `hci_sock_setsockopt_old`,
    /// HCI_FILTER). Nothing is ever sent on it. Without CAP_NET_RAW the kernel silently
    /// narrows the filter to its "security filter" (no LE Meta): read it back with `hciFilter`.
    package static func hciEventSocket(device: UInt16, events: [UInt8], opcode: UInt16) throws(SystemError) -> CInt {
        let fd = try hciSocket(device: device, channel: UInt16(HCI_CHANNEL_RAW), "HCI_CHANNEL_RAW hci\(device)")
        var filter = hci_filter()
        filter.type_mask = 1 << UInt32(HCI_EVENT_PKT)
        var mask: [UInt32] = [0, 0]
        for event in events { mask[Int(event >> 5)] |= 1 << UInt32(event & 31) }
        filter.event_mask = (mask[0], mask[1])
        filter.opcode = opcode
        do throws(SystemError) {
            _ = try blocking("setsockopt", "(HCI_FILTER)") {
                Int(setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size)))
            }
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Attaches a classic BPF program to `fd` (SO_ATTACH_FILTER, socket(7)): the kernel runs it
    /// on each packet before queueing it, and drops those it returns 0 for, so they never wake a
    /// reader. Any socket type; no privilege needed.
    package static func attachSocketFilter(_ fd: CInt, _ program: [SocketFilterInstruction]) throws(SystemError) {
        var filters = program.map { sock_filter(code: $0.code, jt: $0.jumpIfTrue, jf: $0.jumpIfFalse, k: $0.k) }
        _ = try filters.withUnsafeMutableBufferPointer { (buffer) throws(SystemError) in
            var fprog = sock_fprog(len: UInt16(buffer.count), filter: buffer.baseAddress)
            return try blocking("setsockopt", "(SO_ATTACH_FILTER)") {
                Int(setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, socklen_t(MemoryLayout<sock_fprog>.size)))
            }
        }
    }

    /// The event filter the kernel holds for `fd`: packet types and event codes it passes.
    package static func hciFilter(_ fd: CInt) throws(SystemError) -> (types: UInt32, events: [UInt8]) {
        var filter = hci_filter()
        var length = socklen_t(MemoryLayout<hci_filter>.size)
        _ = try blocking("getsockopt", "(HCI_FILTER)") { Int(getsockopt(fd, SOL_HCI, HCI_FILTER, &filter, &length)) }
        let mask = UInt64(filter.event_mask.0) | UInt64(filter.event_mask.1) << 32
        return (filter.type_mask, (0..<64).filter { mask & (1 << UInt64($0)) != 0 }.map(UInt8.init))
    }

    /// socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI), non-blocking, bound to `device` on `channel`.
    private static func hciSocket(device: UInt16, channel: UInt16, _ name: String) throws(SystemError) -> CInt {
        let fd = CInt(try blocking("socket", "(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)") {
            Int(socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | nonBlocking, BTPROTO_HCI))
        })
        var address = sockaddr_hci()
        address.hci_family = sa_family_t(AF_BLUETOOTH)
        address.hci_dev = device
        address.hci_channel = channel
        do throws(SystemError) {
            _ = try blocking("bind", "(\(name))") {
                Int(withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
                    }
                })
            }
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// An LE L2CAP socket, SOCK_SEQPACKET: one ATT PDU per message.
    package static func l2capSocket() throws(SystemError) -> CInt {
        CInt(try blocking("socket", "(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)") {
            Int(socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue) | nonBlocking, BTPROTO_L2CAP))
        })
    }

    /// The ATT fixed channel (CID 4) at `address` (BDADDR_LE_PUBLIC or _RANDOM).
    package static func attAddress(_ address: BluetoothAddress) -> sockaddr_l2 {
        var sa = sockaddr_l2()
        sa.l2_family = sa_family_t(AF_BLUETOOTH)
        sa.l2_psm = 0
        let b = address.littleEndianBytes
        sa.l2_bdaddr = bdaddr_t(b: (b[0], b[1], b[2], b[3], b[4], b[5]))
        sa.l2_cid = latchkey_htobs(LATCHKEY_L2CAP_CID_ATT)
        sa.l2_bdaddr_type = UInt8(address.kind == .random ? BDADDR_LE_RANDOM : BDADDR_LE_PUBLIC)
        return sa
    }

    package static func address(of sa: sockaddr_l2) -> BluetoothAddress {
        let b = sa.l2_bdaddr.b
        let value = [b.0, b.1, b.2, b.3, b.4, b.5].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return BluetoothAddress(value, kind: sa.l2_bdaddr_type == UInt8(BDADDR_LE_RANDOM) ? .random : .public)
    }

    private static func withSocketAddress<R>(_ sa: inout sockaddr_l2, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_l2>.size)) }
        }
    }

    package static func bindATT(_ fd: CInt, to address: BluetoothAddress) throws(SystemError) {
        var sa = attAddress(address)
        _ = try blocking("bind", "(ATT \(address))") { Int(withSocketAddress(&sa) { Glibc.bind(fd, $0, $1) }) }
    }

    package static func listen(_ fd: CInt, backlog: CInt) throws(SystemError) {
        _ = try blocking("listen") { Int(Glibc.listen(fd, backlog)) }
    }

    /// Accepts one connection as a non-blocking socket, with the peer's LE address.
    package static func acceptATT(_ fd: CInt) throws(SystemError) -> IOResult<(CInt, BluetoothAddress)> {
        guard case .done(let client) = try call("accept4", "", { Int(latchkey_accept_nonblocking(fd)) }) else {
            return .wouldBlock
        }
        do throws(SystemError) {
            return .done((CInt(client), try l2capPeer(CInt(client))))
        } catch {
            close(CInt(client))
            throw error
        }
    }

    /// The LE address at the other end of an L2CAP socket (getpeername); ENOTCONN once its
    /// link is gone.
    package static func l2capPeer(_ fd: CInt) throws(SystemError) -> BluetoothAddress {
        var peer = sockaddr_l2()
        var length = socklen_t(MemoryLayout<sockaddr_l2>.size)
        _ = try blocking("getpeername") {
            Int(withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            })
        }
        return address(of: peer)
    }

    /// Starts connecting the ATT channel to `peer`: true when connected at once (the usual
    /// answer for a link that is already up), false while in progress (wait for writable).
    package static func connectATT(_ fd: CInt, to peer: BluetoothAddress) throws(SystemError) -> Bool {
        var sa = attAddress(peer)
        do throws(SystemError) {
            _ = try blocking("connect", "(ATT \(peer))") { Int(withSocketAddress(&sa) { Glibc.connect(fd, $0, $1) }) }
            return true
        } catch where error.errno == .inProgress {
            return false
        }
    }

    /// The channel's incoming and outgoing L2CAP MTUs (L2CAP_OPTIONS).
    package static func l2capMTUs(_ fd: CInt) throws(SystemError) -> (incoming: Int, outgoing: Int) {
        var options = l2cap_options()
        var length = socklen_t(MemoryLayout<l2cap_options>.size)
        _ = try blocking("getsockopt", "(L2CAP_OPTIONS)") {
            Int(getsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &options, &length))
        }
        return (Int(options.imtu), Int(options.omtu))
    }
}

extension Errno {
    package static let permissionDenied = Errno(rawValue: 13)       // EACCES
    package static let noSuchDevice = Errno(rawValue: 19)           // ENODEV
    package static let timedOut = Errno(rawValue: 110)              // ETIMEDOUT
    package static let inProgress = Errno(rawValue: 115)            // EINPROGRESS
}
