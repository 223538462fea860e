#if canImport(Glibc)
import Glibc
#endif
import LatchkeyTransport

/// The hook commands an agent runs (`execution.alert_hook`): each started with
/// posix_spawn as `/bin/sh -c <command>` in a process group of its own, collected without
/// waiting (`reap()` on SIGCHLD), and — when a loop is given — killed with its whole group
/// once it outlives `timeLimit`, so a hung hook neither blocks the loop nor piles up.
public final class HookProcesses {
    /// The hook: run as `/bin/sh -c`, so it may carry arguments.
    public let command: String
    /// How long a hook may run before its process group gets SIGKILL.
    public let timeLimit: Duration
    /// 30 s: enough for a notification over a slow network, short enough that a hook that
    /// hangs on every jam does not accumulate.
    public static let defaultTimeLimit: Duration = .seconds(30)
    private let loop: (any EventLoop)?
    /// Hooks started and not reaped yet, with their time-limit timers.
    private var deadlines: [pid_t: Scheduled?] = [:]
    private var killed: Set<pid_t> = []
    /// Called when a hook could not start, failed, or was killed at its time limit.
    public var onFailure: ((String) -> Void)?

    public var running: Set<pid_t> { Set(deadlines.keys) }

    /// Without a loop there is no time limit (tests that wait for the child themselves).
    public init(command: String, loop: (any EventLoop)?, timeLimit: Duration = HookProcesses.defaultTimeLimit) {
        self.command = command; self.loop = loop; self.timeLimit = timeLimit
    }

    /// Starts the hook with `environment` added to the agent's own.
    public func start(environment: [(String, String)]) {
        let pid: pid_t
        do { pid = try spawn(command, environment: environment) } catch {
            onFailure?("alert hook did not start: \(error)")
            return
        }
        // `.some`: without a loop the entry is a nil timer, and assigning a bare nil would drop it.
        deadlines[pid] = .some(loop?.schedule(after: timeLimit) { [weak self] in self?.expire(pid) })
    }

    private func expire(_ pid: pid_t) {
        guard deadlines[pid] != nil else { return }
        // The group: the shell and whatever it started (a `sleep`, a `curl`).
        kill(-pid, SIGKILL)
        killed.insert(pid)
    }

    /// Collects finished hooks without waiting (call on SIGCHLD). Returns their pids.
    @discardableResult
    public func reap() -> [pid_t] {
        var done: [pid_t] = []
        for pid in deadlines.keys {
            var status: CInt = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { continue }
            done.append(pid)
            let exited = status & 0x7f == 0
            let code = (status >> 8) & 0xff
            if killed.remove(pid) != nil {
                onFailure?("alert hook \(pid) ran longer than \(timeLimit.components.seconds) s and was killed")
            } else if !exited || code != 0 {
                onFailure?("alert hook \(pid) " + (exited ? "exited with \(code)" : "killed by signal \(status & 0x7f)"))
            }
        }
        for pid in done { deadlines.removeValue(forKey: pid)??.cancel() }
        return done
    }

    /// Hands a pid back to a caller that waits for it itself (tests); no longer reaped here.
    public func forget(_ pid: pid_t) { deadlines.removeValue(forKey: pid)??.cancel() }
}

struct SpawnError: Error, CustomStringConvertible {
    var code: CInt
    var description: String { String(cString: strerror(code)) }
}

/// posix_spawn(`/bin/sh -c command`) with the current environment plus `extra`, in a new
/// process group (so a time limit can kill everything the hook started).
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
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
    posix_spawnattr_setpgroup(&attributes, 0)
    var pid: pid_t = 0
    let rc = argv.withUnsafeBufferPointer { a in
        envp.withUnsafeBufferPointer { e in posix_spawn(&pid, "/bin/sh", nil, &attributes, a.baseAddress!, e.baseAddress!) }
    }
    guard rc == 0 else { throw SpawnError(code: rc) }
    return pid
}
