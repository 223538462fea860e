#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import LatchkeyDaemons

extension Latchkey {
    /// Run by `latchkey-gave-up@<role>.service`, the `OnFailure=` unit of both agents' units.
    struct GaveUp: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gave-up",
            abstract: "Raise the alert that systemd gave up on an agent (run by latchkey-gave-up@.service).")

        @Option(name: .shortAndLong, help: "The agent's configuration file (its execution.alert_hook runs).")
        var config: String
        @Option(help: "The unit systemd gave up on, when $MONITOR_UNIT does not say.")
        var unit: String

        func run() throws {
            let alert = GaveUpAlert.fromMonitor(unit: unit) { name in getenv(name).map { String(cString: $0) } }
            // Under systemd, stderr is a journal stream: printErrorLine's "<N>" sets the line's
            // priority (SyslogLevelPrefix=, on by default): the alert at crit, a problem
            // raising it at warning.
            let ok = alert.raise(configPath: config,
                                 log: { printErrorLine($0, priority: .critical) },
                                 warn: { printErrorLine($0, priority: .warning) })
            if !ok { throw ExitCode.failure }
        }
    }
}
