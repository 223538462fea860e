#if canImport(Glibc)
import Glibc
#endif
import LatchkeyManagers
import LatchkeyTransport

/// M4 alerts from the agent's always-on part: one log line each, and a configurable hook
/// command that gets the event in its environment. Hooks run with posix_spawn and are
/// reaped later (SIGCHLD), so a slow hook never blocks the loop.
public final class HookAlertSink: ConnectionAlertSink {
    /// The hook: run as `/bin/sh -c <command>`, so it may carry arguments. Nil: log only.
    public let command: String?
    /// Where the log line goes.
    private let log: (String) -> Void
    /// Wall-clock seconds since the epoch (injected for tests).
    private let wallClock: () -> Double
    /// Hooks started and not reaped yet.
    public private(set) var running: Set<pid_t> = []
    /// Called when a hook could not start or exited with a failure.
    public var onHookFailure: ((String) -> Void)?

    public init(command: String?, log: @escaping (String) -> Void, wallClock: @escaping () -> Double = HookAlertSink.now) {
        self.command = command; self.log = log; self.wallClock = wallClock
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
        guard let command else { return }
        do {
            running.insert(try spawn(command, environment: environment(for: alert)))
        } catch {
            onHookFailure?("alert hook did not start: \(error)")
        }
    }

    /// Collects finished hooks without waiting (call on SIGCHLD). Returns their pids.
    @discardableResult
    public func reap() -> [pid_t] {
        var done: [pid_t] = []
        for pid in running {
            var status: CInt = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { continue }
            done.append(pid)
            let exited = status & 0x7f == 0
            let code = (status >> 8) & 0xff
            if !exited || code != 0 {
                onHookFailure?("alert hook \(pid) " + (exited ? "exited with \(code)" : "killed by signal \(status & 0x7f)"))
            }
        }
        running.subtract(done)
        return done
    }

    /// Hands a pid back to a caller that waits for it itself (tests); no longer reaped here.
    public func forget(_ pid: pid_t) { running.remove(pid) }
}

struct SpawnError: Error, CustomStringConvertible {
    var code: CInt
    var description: String { String(cString: strerror(code)) }
}

/// posix_spawn(`/bin/sh -c command`) with the current environment plus `extra`.
func spawn(_ command: String, environment extra: [(String, String)]) throws(SpawnError) -> pid_t {
    let keys = Set(extra.map(\.0))
    var env: [String] = []
    var p = environ
    while let entry = p.pointee {
        let s = String(cString: entry)
        if let eq = s.firstIndex(of: "="), !keys.contains(String(s[..<eq])) { env.append(s) }
        p += 1
    }
    env += extra.map { "\($0.0)=\($0.1)" }
    let argv: [UnsafeMutablePointer<CChar>?] = ["/bin/sh", "-c", command].map { (s: String) in strdup(s) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
    var pid: pid_t = 0
    let rc = argv.withUnsafeBufferPointer { a in
        envp.withUnsafeBufferPointer { e in posix_spawn(&pid, "/bin/sh", nil, nil, a.baseAddress!, e.baseAddress!) }
    }
    guard rc == 0 else { throw SpawnError(code: rc) }
    return pid
}
