#if canImport(Glibc)
import Glibc
#endif
import LatchkeyTransport

/// sd_notify(3) without libsystemd: one datagram to `$NOTIFY_SOCKET` per state change
/// (`READY=1`, `WATCHDOG=1`, `STATUS=…`, `STOPPING=1`). The protocol is a newline-separated
/// list of assignments in one AF_UNIX SOCK_DGRAM message; a socket name starting with `@`
/// is in the abstract namespace (the `@` stands for a leading NUL byte, as in systemd's
/// sd_notify implementation, src/libsystemd/sd-daemon/sd-daemon.c).
///
/// Outside systemd (`NOTIFY_SOCKET` unset) every call is a no-op that returns false, so the
/// agents run the same way by hand.
public final class SystemdNotifier {
    public let socketPath: String?
    /// Half of `$WATCHDOG_USEC` (sd_watchdog_enabled(3): "ping every half interval"),
    /// nil when the service has no watchdog or `$WATCHDOG_PID` names another process.
    public let watchdogPingInterval: Duration?
    private var fd: Int32 = -1

    public init(environment: [String: String], pid: Int32 = getpid()) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path.flatMap { $0.hasPrefix("/") || $0.hasPrefix("@") ? $0 : nil }
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == pid } ?? true
        if forUs, let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0 {
            watchdogPingInterval = .microseconds(Int64(usec / 2))
        } else {
            watchdogPingInterval = nil
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Sends `assignments` (e.g. `["READY=1", "STATUS=advertising"]`) as one datagram.
    /// Returns whether the message was sent; failures are not fatal (systemd will notice).
    @discardableResult
    public func notify(_ assignments: [String]) -> Bool {
        guard let socketPath else { return false }
        if fd < 0 {
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return false }
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(socketPath.utf8)
        if name.first == UInt8(ascii: "@") { name[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count < capacity || (name.first == 0 && name.count <= capacity) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in name.enumerated() { raw[i] = byte }
        }
        // Abstract names are exactly their bytes long; paths carry their terminating NUL.
        let length = MemoryLayout<sa_family_t>.size + name.count + (name.first == 0 ? 0 : 1)
        let message = Array(assignments.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sa, socklen_t(length)) }
            }
        }
        return sent == message.count
    }

    /// Sends `WATCHDOG=1` every `watchdogPingInterval` from `loop`, until the returned
    /// handle is cancelled. Nil when there is no watchdog: an idle agent then has no timer.
    public func feedWatchdog(on loop: any EventLoop) -> WatchdogFeeder? {
        guard let interval = watchdogPingInterval, socketPath != nil else { return nil }
        let feeder = WatchdogFeeder(notifier: self, loop: loop, interval: interval)
        feeder.arm()
        return feeder
    }
}

/// The loop timer behind `SystemdNotifier.feedWatchdog`: a ping, then the next timer.
public final class WatchdogFeeder {
    let notifier: SystemdNotifier
    let loop: any EventLoop
    public let interval: Duration
    private var timer: Scheduled?
    public private(set) var pings = 0

    init(notifier: SystemdNotifier, loop: any EventLoop, interval: Duration) {
        self.notifier = notifier; self.loop = loop; self.interval = interval
    }

    func arm() {
        timer = loop.schedule(after: interval) { [weak self] in
            guard let self else { return }
            self.pings += 1
            self.notifier.notify(["WATCHDOG=1"])
            self.arm()
        }
    }

    public func cancel() { timer?.cancel(); timer = nil }
}
