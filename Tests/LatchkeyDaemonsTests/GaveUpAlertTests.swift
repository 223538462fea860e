#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeyDemo
import Testing

/// When systemd gives up on an agent, its OnFailure= unit runs `latchkey gave-up`,
/// which alerts through the agents' sinks: a journal line and `execution.alert_hook`.
@Suite struct GaveUpAlertTests {
    private func tempDirectory() -> String {
        var template = Array("/tmp/latchkey-gaveup-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    private let startLimit = GaveUpAlert(unit: "latchkey-lock.service", result: "start-limit-hit",
                                         exitCode: "killed", exitStatus: "KILL")

    @Test func theMonitorVariablesSayWhatSystemdGaveUpOn() {
        let env = ["MONITOR_SERVICE_RESULT": "start-limit-hit", "MONITOR_EXIT_CODE": "killed",
                   "MONITOR_EXIT_STATUS": "KILL"]
        let alert = GaveUpAlert.fromMonitor(unit: "latchkey-lock.service") { env[$0] }
        #expect(alert == startLimit)
        #expect(alert.detail.contains("hit its start limit") && alert.detail.contains("last exit: killed KILL"))
        let config = GaveUpAlert(unit: "latchkey-lock.service", result: "exit-code", exitCode: "exited", exitStatus: "78")
        #expect(config.detail.contains("configuration is invalid"))
    }

    @Test func theHookRunsWithTheEventAndTheJournalLineComesFirst() throws {
        let dir = tempDirectory()
        try writeFile(dir + "/lock.yaml", "name: x\nexecution:\n  alert_hook: printf '%s|%s|%s' \"$LATCHKEY_EVENT\" \"$LATCHKEY_UNIT\" \"$LATCHKEY_RESULT\" > \(dir)/out\n")
        var lines: [String] = []
        var warnings: [String] = []
        let ok = startLimit.raise(configPath: dir + "/lock.yaml", log: { lines.append($0) }, warn: { warnings.append($0) })
        #expect(ok && warnings.isEmpty)
        #expect(lines == ["ALERT: " + startLimit.detail])
        // raise waits for the hook: its output is there when it returns.
        #expect(try readTextFile(dir + "/out") == "gave_up|latchkey-lock.service|start-limit-hit")
    }

    @Test func aConfigurationBrokenElsewhereStillNamesItsHook() throws {
        let dir = tempDirectory()
        try writeFile(dir + "/lock.yaml", "lock:\n  auto_relock_seconds: soon\nexecution:\n  alert_hook: touch \(dir)/ran\n")
        #expect(startLimit.raise(configPath: dir + "/lock.yaml", log: { _ in }, warn: { _ in }))
        #expect(access(dir + "/ran", F_OK) == 0)
    }

    @Test func anUnreadableConfigurationOrAFailingHookStillLogsAndFails() throws {
        let dir = tempDirectory()
        var lines: [String] = []
        var warnings: [String] = []
        #expect(!startLimit.raise(configPath: dir + "/missing.yaml", log: { lines.append($0) }, warn: { warnings.append($0) }))
        #expect(lines.count == 1 && warnings.count == 1 && warnings[0].contains("not run"))
        try writeFile(dir + "/lock.yaml", "execution:\n  alert_hook: exit 4\n")
        warnings = []
        #expect(!startLimit.raise(configPath: dir + "/lock.yaml", log: { _ in }, warn: { warnings.append($0) }))
        #expect(warnings.count == 1 && warnings[0].contains("exited with 4"))
    }

    @Test func withoutAHookTheJournalLineIsTheAlert() throws {
        let dir = tempDirectory()
        try writeFile(dir + "/phone.yaml", "lock_address: \"00:00:00:00:00:01\"\n")
        var lines: [String] = []
        #expect(startLimit.raise(configPath: dir + "/phone.yaml", log: { lines.append($0) }, warn: { _ in }))
        #expect(lines.count == 1)
    }
}

/// The alert's priority reaches journald: one `<N>` prefix per line, the one asked for (a
/// second prefix stays in the message and the line is filed at the first's priority: the
/// HIL's 84-systemd-gave-up-alert found the crit alert at err as "<2>ALERT: …").
@Suite struct ErrorStreamPriorityTests {
    @Test func aLineToTheJournalCarriesOnePrefixItsOwnPriority() {
        #expect(errorStreamLines("ALERT: gave up", priority: .critical, toJournal: true) == ["<2>ALERT: gave up"])
        #expect(errorStreamLines("Error: bad", priority: .error, toJournal: true) == ["<3>Error: bad"])
        #expect(errorStreamLines("a\nb", priority: .warning, toJournal: true) == ["<4>a", "<4>b"])
    }

    @Test func outsideTheJournalNoPrefix() {
        #expect(errorStreamLines("ALERT: gave up", priority: .critical, toJournal: false) == ["ALERT: gave up"])
    }
}
