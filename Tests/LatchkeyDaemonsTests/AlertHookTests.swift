#if canImport(Glibc)
import Glibc
#endif
import LatchkeyConfig
import LatchkeyControl
import LatchkeyLock
import LatchkeyManagers
@testable import LatchkeyDaemons
@testable import LatchkeyDemo
@testable import LatchkeySettings
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTransport
import Testing

/// The alert hook is a real process started with posix_spawn, given the event in its
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
        let none = try ExecutionSettings.read(try ConfigFile(path: "x.yaml", text: "name: x\n").root)
        #expect(none == ExecutionSettings())
        let file = try ConfigFile(path: "x.yaml", text: """
            execution:
              mode: background
              queue_capacity: 16
              wake_budget_seconds: 5
              alert_hook: /usr/local/bin/notify
              fast_advertising: false
            """)
        let s = try ExecutionSettings.read(file.root)
        #expect(s.mode == .background && s.queueCapacity == 16 && s.wakeBudget == .seconds(5))
        #expect(s.alertHook == "/usr/local/bin/notify" && !s.fastAdvertising)
        #expect(throws: ConfigError.self) {
            try ExecutionSettings.read(try ConfigFile(path: "x.yaml", text: "execution:\n  mode: sleepy\n").root)
        }
    }

    /// The lock's configuration keeps its hook: it runs for jam, lockout and forced door
    /// (LockAlarmHookTests), never read and ignored.
    @Test func aLockConfigurationKeepsItsAlertHook() throws {
        let text = """
            transport: sim
            sim:
              address: "C0:FF:EE:00:00:01"
            board: sim
            execution:
              alert_hook: /usr/local/bin/notify
            """
        let lock = try LockSettings.load(ConfigFile(path: "lock.yaml", text: text), boards: repositoryBoards)
        #expect(lock.execution.alertHook == "/usr/local/bin/notify")
    }
}

/// The lock's alert hook: a jammed bolt, a wrong-code lockout and a door forced open run it
/// with the alarm in its environment; nothing else does; a hook that hangs is killed.
@Suite struct LockAlarmHookTests {
    private func tempDirectory() -> String {
        var template = Array("/tmp/latchkey-alarm-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    private func alarm(_ code: AlarmCode, after: LockState = .notFullyLocked) -> LockEvent {
        LockEvent(kind: .doorLockAlarm(code), time: .zero + .milliseconds(4_250), lockStateBefore: .locking,
                  lockStateAfter: after, doorState: .closed)
    }

    /// Waits for the one hook `hook` started (no sleeping) and returns its exit status.
    private func waitForTheHook(_ hooks: HookProcesses) throws -> CInt {
        let pid = try #require(hooks.running.first)
        hooks.forget(pid)
        var status: CInt = 0
        #expect(waitpid(pid, &status, 0) == pid)
        return status
    }

    @Test func aJamRunsTheHookWithTheAlarmInItsEnvironment() throws {
        let dir = tempDirectory()
        let command = "printf '%s|%s|%s|%s|%s|%s|%s\\n' \"$LATCHKEY_EVENT\" \"$LATCHKEY_ALARM\" \"$LATCHKEY_LOCK_STATE\" "
            + "\"$LATCHKEY_DOOR_STATE\" \"$LATCHKEY_TIME\" \"$LATCHKEY_MONOTONIC_MS\" \"$LATCHKEY_DETAIL\" > \(dir)/out.txt"
        var logged: [String] = []
        let hook = LockAlarmHook(command: command, loop: nil, log: { logged.append($0) }, wallClock: { 1_700_000_000.5 })
        let event = alarm(.lockJammed)
        hook.handle(event)
        #expect(logged == ["alarm hook: lock_jammed"])
        #expect(try waitForTheHook(hook.hooks) == 0)
        let out = try readTextFile(dir + "/out.txt")
        #expect(out == "alarm|lock_jammed|\(LockState.notFullyLocked)|\(DoorState.closed)|1700000000.500|4250|\(event.summary)\n")
    }

    @Test func lockoutAndForcedDoorRunItAndNoOtherEventDoes() throws {
        let hook = LockAlarmHook(command: "exit 0", loop: nil, log: { _ in })
        for code in AlarmCode.allCases {
            hook.handle(alarm(code))
            let expected = [AlarmCode.lockJammed, .wrongCodeEntryLimit, .doorForcedOpen].contains(code)
            #expect(hook.hooks.running.count == (expected ? 1 : 0), "\(code)")
            if expected { #expect(try waitForTheHook(hook.hooks) == 0) }
        }
        hook.handle(LockEvent(kind: .doorStateChange(.open), time: .zero, lockStateBefore: .locked, lockStateAfter: .locked,
                              doorState: .open))
        #expect(hook.hooks.running.isEmpty)
    }

    /// End to end: `latchkey lock` with `execution.alert_hook`, a locked door forced open on
    /// the simulated chip, and the hook runs (started by the daemon; the rig leaves the process's
    /// signals alone, so reaping on SIGCHLD is tested above, on HookProcesses directly).
    @Test func aLockDaemonRunsItsHookWhenTheDoorIsForcedOpen() throws {
        let rig = try DaemonRig()
        defer { rig.close() }
        let out = rig.directory + "/alarm.txt"
        try writeFile(rig.directory + "/lock.yaml", try readTextFile(rig.directory + "/lock.yaml")
                      + "\nexecution:\n  alert_hook: echo \"$LATCHKEY_ALARM $LATCHKEY_LOCK_STATE\" > \(out)\n")
        try rig.startLock()
        let lock = try #require(rig.lock)
        #expect(rig.wait(until: { lock.readiness?.isReady == true }))
        #expect(lock.agent.controller.lockState == .locked)
        try FileGPIOSimulator(directory: rig.directory + "/gpio/rig-lock").pull("door", high: true)
        #expect(rig.wait(until: { ((try? readTextFile(out)) ?? "").hasSuffix("\n") }))
        #expect(try readTextFile(out) == "door_forced_open \(LockState.locked)\n")
    }

    /// A hook that hangs is killed, with everything it started, at its time limit — measured
    /// on the loop's clock, so the test moves time instead of waiting for it.
    @Test func aHookThatHangsIsKilledAtItsTimeLimit() throws {
        let loop = ManualEventLoop()
        var failures: [String] = []
        let hooks = HookProcesses(command: "sleep 600; true", loop: loop, timeLimit: .seconds(30))
        hooks.onFailure = { failures.append($0) }
        hooks.start(environment: [])
        let pid = try #require(hooks.running.first)
        loop.advance(by: .seconds(29))
        var info = siginfo_t()
        #expect(waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info._sifields._sigchld.si_pid == 0)  // still running
        loop.advance(by: .seconds(2))
        #expect(waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == 0)  // dies: no sleeping to wait for it
        #expect(hooks.reap() == [pid])
        #expect(failures == ["alert hook \(pid) ran longer than 30 s and was killed"])
        #expect(hooks.running.isEmpty)
    }
}
