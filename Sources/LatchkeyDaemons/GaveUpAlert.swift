#if canImport(Glibc)
import Glibc
#endif
import LatchkeyConfig
import LatchkeyControl
import LatchkeyPosix
import LatchkeyTransport

/// systemd gave up on an agent: it exhausted its start limit, or exited with a status no
/// restart can fix (78, a configuration error). Its unit's `OnFailure=` starts
/// `latchkey-gave-up@<role>.service`, which runs `latchkey gave-up`: the alert goes where the
/// agent's own alerts go — a line in the journal, here at `crit` — and the role's
/// `execution.alert_hook` runs with `LATCHKEY_EVENT=gave_up` (docs/CONFIGURATION.md). A dead
/// lock is never silent.
public struct GaveUpAlert: Sendable, Equatable {
    /// The unit systemd gave up on (`latchkey-lock.service`).
    public var unit: String
    /// What systemd said of it: `$MONITOR_SERVICE_RESULT` (`start-limit-hit`, `exit-code`,
    /// `watchdog`, ...), `$MONITOR_EXIT_CODE` (`exited`, `killed`, `dumped`) and
    /// `$MONITOR_EXIT_STATUS` (a number or a signal name); empty when not set.
    public var result: String
    public var exitCode: String
    public var exitStatus: String

    public init(unit: String, result: String, exitCode: String, exitStatus: String) {
        self.unit = unit; self.result = result; self.exitCode = exitCode; self.exitStatus = exitStatus
    }

    /// The failure as systemd hands it to an `OnFailure=` unit (systemd.exec(5), "Environment
    /// variables in spawned processes": the `MONITOR_*` variables).
    public static func fromMonitor(unit: String, environment: (String) -> String?) -> GaveUpAlert {
        GaveUpAlert(unit: environment("MONITOR_UNIT") ?? unit, result: environment("MONITOR_SERVICE_RESULT") ?? "",
                    exitCode: environment("MONITOR_EXIT_CODE") ?? "", exitStatus: environment("MONITOR_EXIT_STATUS") ?? "")
    }

    /// The sentence in the journal and in `LATCHKEY_DETAIL`: why it is down, in words.
    public var detail: String {
        let why: String
        switch result {
        case "start-limit-hit": why = "it failed too often in a row and hit its start limit"
        case "exit-code" where exitStatus == "78": why = "its configuration is invalid (exit status 78; the line before says which field)"
        // With Restart=always only a refused restart fails the unit, and systemd 252 keeps the
        // last failure's result (`signal`, `exit-code`) when the start limit refuses it.
        case "": why = "it failed and systemd stopped restarting it"
        default: why = "it failed (\(result)) and systemd stopped restarting it (its start limit)"
        }
        let last = exitCode.isEmpty ? "" : "; last exit: \(exitCode) \(exitStatus)"
        return "systemd gave up on \(unit): \(why)\(last). It stays down until someone starts it (systemctl start \(unit))"
    }

    /// The variables the hook receives, in addition to the environment it runs in.
    public func environment(wallClock: Double, monotonicMilliseconds: Int64) -> [(String, String)] {
        [("LATCHKEY_EVENT", "gave_up"), ("LATCHKEY_UNIT", unit), ("LATCHKEY_RESULT", result),
         ("LATCHKEY_TIME", format3(wallClock)), ("LATCHKEY_MONOTONIC_MS", "\(monotonicMilliseconds)"),
         ("LATCHKEY_DETAIL", detail)]
    }

    /// The role's `execution.alert_hook`, read from its configuration without the rest of it:
    /// a file broken elsewhere (the very reason the agent may be down) still names its hook.
    /// nil: no hook; throws when the file or the `execution:` table cannot be read.
    public static func alertHook(configPath: String) throws(RuntimeError) -> String? {
        let file = try AgentProcesses.loadConfig(configPath)
        do { return try file.root.table("execution")?.string("alert_hook") } catch {
            throw RuntimeError.configuration("\(error)")
        }
    }

    /// Raises the alert: `log` gets the journal line (and any trouble with the hook), then the
    /// hook runs and is waited for, at most `HookProcesses.defaultTimeLimit` (its group is
    /// killed then). Returns whether every sink took it: false when the configuration could
    /// not be read for the hook, or the hook failed, so the unit shows it failed.
    public func raise(configPath: String, log: (String) -> Void, warn: @escaping (String) -> Void) -> Bool {
        log("ALERT: \(detail)")
        let hook: String?
        do { hook = try Self.alertHook(configPath: configPath) } catch {
            warn("gave-up alert: the alert hook was not run, its configuration cannot be read: \(error)")
            return false
        }
        guard let hook else { return true }
        let loop = PosixEventLoop()
        let hooks = HookProcesses(command: hook, loop: loop)
        var failed = false
        hooks.onFailure = { failed = true; warn("gave-up alert: \($0)") }
        do {
            let child = try loop.onSignal(.child) { hooks.reap() }
            defer { child.cancel() }
            // Also looked for every 50 ms: a process that runs other loops (the tests) may have
            // another one's signal watch take the SIGCHLD, and the hook would look alive until
            // its time limit.
            var tick: Scheduled?
            func reapSoon() { tick = loop.schedule(after: .milliseconds(50)) { hooks.reap(); reapSoon() } }
            reapSoon()
            defer { tick?.cancel() }
            hooks.start(environment: environment(wallClock: HookAlertSink.now(),
                                                 monotonicMilliseconds: loop.now.nanoseconds / 1_000_000))
            // The time limit kills the hook a little before this; the margin lets the loop reap it.
            try loop.run(until: { hooks.running.isEmpty }, timeout: HookProcesses.defaultTimeLimit + .seconds(5))
        } catch {
            warn("gave-up alert: waiting for the alert hook: \(error)")
            return false
        }
        return !failed && hooks.running.isEmpty
    }
}
