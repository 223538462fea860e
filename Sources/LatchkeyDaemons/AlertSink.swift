#if canImport(Glibc)
import Glibc
#endif
import LatchkeyManagers
import LatchkeyTransport

/// Connection alerts from the agent's always-on part: one log line each, and a configurable hook
/// command that gets the event in its environment (`HookProcesses`: posix_spawn, reaped on
/// SIGCHLD, killed at its time limit), so a slow hook never blocks the loop.
public final class HookAlertSink: ConnectionAlertSink {
    /// The hook's processes; nil: log only.
    public let hooks: HookProcesses?
    /// Where the log line goes.
    private let log: (String) -> Void
    /// Wall-clock seconds since the epoch (injected for tests).
    private let wallClock: () -> Double

    public init(command: String?, loop: (any EventLoop)? = nil, log: @escaping (String) -> Void,
                wallClock: @escaping () -> Double = HookAlertSink.now) {
        hooks = command.map { HookProcesses(command: $0, loop: loop) }
        self.log = log; self.wallClock = wallClock
    }

    public var command: String? { hooks?.command }
    public var running: Set<pid_t> { hooks?.running ?? [] }
    /// Called when a hook could not start, failed or was killed at its time limit.
    public var onHookFailure: ((String) -> Void)? {
        get { hooks?.onFailure }
        set { hooks?.onFailure = newValue }
    }

    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The variables a hook receives, in addition to the agent's own environment.
    public func environment(for alert: ConnectionAlert) -> [(String, String)] {
        let wall = wallClock()
        return [("LATCHKEY_DEVICE", "\(alert.device)"), ("LATCHKEY_EVENT", alert.event.rawValue),
                ("LATCHKEY_TIME", format3(wall)), ("LATCHKEY_MONOTONIC_MS", "\(alert.time.nanoseconds / 1_000_000)"),
                ("LATCHKEY_DETAIL", alert.detail)]
    }

    public func raise(_ alert: ConnectionAlert) {
        log("alert: \(alert.event.rawValue) \(alert.device)" + (alert.detail.isEmpty ? "" : " (\(alert.detail))"))
        hooks?.start(environment: environment(for: alert))
    }

    /// Collects finished hooks without waiting (call on SIGCHLD). Returns their pids.
    @discardableResult
    public func reap() -> [pid_t] { hooks?.reap() ?? [] }

    /// Hands a pid back to a caller that waits for it itself (tests); no longer reaped here.
    public func forget(_ pid: pid_t) { hooks?.forget(pid) }
}
