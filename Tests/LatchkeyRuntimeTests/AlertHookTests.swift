#if canImport(Glibc)
import Glibc
#endif
import LatchkeyConfig
import LatchkeyManagers
@testable import LatchkeyRuntime
import LatchkeyTransport
import Testing

/// M4: the alert hook is a real process started with posix_spawn, given the event in its
/// environment, and collected without blocking.
@Suite struct AlertHookTests {
    private func tempDirectory() -> String {
        var template = Array("/tmp/latchkey-alert-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        return dir
    }

    @Test func theHookReceivesDeviceEventAndTimeInItsEnvironment() throws {
        let dir = tempDirectory()
        let script = dir + "/hook.sh"
        try writeFile(script, "#!/bin/sh\nprintf '%s|%s|%s|%s\\n' \"$LATCHKEY_DEVICE\" \"$LATCHKEY_EVENT\" \"$LATCHKEY_TIME\" "
                      + "\"$LATCHKEY_DETAIL\" > \"$1\"\n", mode: 0o700)
        var logged: [String] = []
        let sink = HookAlertSink(command: "\(script) \(dir)/out.txt", log: { logged.append($0) }, wallClock: { 1_700_000_000.25 })
        let device = BluetoothAddress(0xD0_0D_00_00_00_01)
        sink.raise(ConnectionAlert(device: device, event: .disconnection, time: .zero, detail: "supervision timeout"))
        #expect(logged == ["alert: disconnection \(device) (supervision timeout)"])
        let pid = try #require(sink.running.first)
        sink.forget(pid)
        var status: CInt = 0
        #expect(waitpid(pid, &status, 0) == pid)  // waits for the child, no sleeping
        #expect(status == 0)
        let out = try readTextFile(dir + "/out.txt")
        #expect(out == "\(device)|disconnection|1700000000.250|supervision timeout\n")
    }

    @Test func aFailingHookIsReportedWhenReaped() throws {
        var failures: [String] = []
        let sink = HookAlertSink(command: "exit 3", log: { _ in })
        sink.onHookFailure = { failures.append($0) }
        sink.raise(ConnectionAlert(device: BluetoothAddress(1), event: .connection, time: .zero))
        let pid = try #require(sink.running.first)
        // Wait for the child to become a zombie without reaping it (waitid WNOWAIT), then reap.
        var info = siginfo_t()
        #expect(waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == 0)
        #expect(sink.reap() == [pid])
        #expect(failures == ["alert hook \(pid) exited with 3"])
        #expect(sink.running.isEmpty)
    }

    @Test func withoutAHookAlertsAreLoggedOnly() {
        var logged: [String] = []
        let sink = HookAlertSink(command: nil, log: { logged.append($0) })
        sink.raise(ConnectionAlert(device: BluetoothAddress(1), event: .notification, time: .zero))
        #expect(logged.count == 1 && sink.running.isEmpty)
    }
}

@Suite struct ExecutionSettingsTests {
    @Test func theExecutionTableIsReadWithDefaults() throws {
        let none = try ExecutionSettings.read(try ConfigFile(path: "x.yaml", text: "name: x\n").root, role: .phone)
        #expect(none == ExecutionSettings())
        let file = try ConfigFile(path: "x.yaml", text: """
            execution:
              mode: background
              queue_capacity: 16
              wake_budget_seconds: 5
              alert_hook: /usr/local/bin/notify
              fast_advertising: false
            """)
        let s = try ExecutionSettings.read(file.root, role: .phone)
        #expect(s.mode == .background && s.queueCapacity == 16 && s.wakeBudget == .seconds(5))
        #expect(s.alertHook == "/usr/local/bin/notify" && !s.fastAdvertising)
        #expect(throws: ConfigError.self) {
            try ExecutionSettings.read(try ConfigFile(path: "x.yaml", text: "execution:\n  mode: sleepy\n").root, role: .phone)
        }
    }

    /// The lock has no alert hook to run: a hook in lock.yaml is an error at its line, never
    /// accepted and ignored (issue 18).
    @Test func aLockConfigurationWithAnAlertHookIsRefusedAtItsLine() throws {
        let text = """
            transport: sim
            sim:
              address: "C0:FF:EE:00:00:01"
            board: sim
            execution:
              mode: foreground
              alert_hook: /usr/local/bin/notify
            """
        let error = #expect(throws: ConfigError.self) {
            try LockSettings.load(ConfigFile(path: "lock.yaml", text: text), boards: repositoryBoards)
        }
        #expect(error?.file == "lock.yaml" && error?.line == 7 && error?.field == "execution.alert_hook")
        #expect(error?.description.hasPrefix("lock.yaml:7: field 'execution.alert_hook': the lock runs no alert hook") == true)
        // The phone's own hook stays.
        let phone = try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: """
            lock_address: "C0:FF:EE:00:00:01"
            sim:
              address: "C0:FF:EE:00:00:02"
            execution:
              alert_hook: /usr/local/bin/notify
            """))
        #expect(phone.execution.alertHook == "/usr/local/bin/notify")
    }
}
