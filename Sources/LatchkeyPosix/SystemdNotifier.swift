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
    /// Made at the first notification (none outside systemd).
    private lazy var sender: UnixDatagramSender? = socketPath.flatMap { UnixDatagramSender(path: $0) }

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

    /// Sends `assignments` (e.g. `["READY=1", "STATUS=advertising"]`) as one datagram.
    /// Returns whether the message was sent; failures are not fatal (systemd will notice).
    @discardableResult
    public func notify(_ assignments: [String]) -> Bool {
        guard let sender else { return false }
        return sender.send(Array(assignments.joined(separator: "\n").utf8))
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
