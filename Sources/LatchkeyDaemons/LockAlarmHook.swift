import LatchkeyLock
import LatchkeyTransport

/// The lock's alarms a person must hear about at once — a jammed bolt, a wrong-code
/// lockout, a door forced open — run `execution.alert_hook` with the alarm in the hook's
/// environment. Every other event stays in the audit log and the event output only.
public final class LockAlarmHook {
    /// The alarms that run the hook, with the name `LATCHKEY_ALARM` gives each.
    public static let alarms: [AlarmCode: String] = [
        .lockJammed: "lock_jammed", .wrongCodeEntryLimit: "wrong_code_entry_limit", .doorForcedOpen: "door_forced_open",
    ]
    public let hooks: HookProcesses
    private let log: (String) -> Void
    private let wallClock: () -> Double

    public init(command: String, loop: (any EventLoop)?, log: @escaping (String) -> Void,
                wallClock: @escaping () -> Double = HookAlertSink.now) {
        hooks = HookProcesses(command: command, loop: loop)
        self.log = log; self.wallClock = wallClock
    }

    /// The variables the hook receives for an alarm, in addition to the agent's own environment.
    public func environment(for event: LockEvent, alarm: String) -> [(String, String)] {
        [("LATCHKEY_EVENT", "alarm"), ("LATCHKEY_ALARM", alarm), ("LATCHKEY_LOCK_STATE", "\(event.lockStateAfter)"),
         ("LATCHKEY_DOOR_STATE", "\(event.doorState)"), ("LATCHKEY_TIME", format3(wallClock())),
         ("LATCHKEY_MONOTONIC_MS", "\(event.time.nanoseconds / 1_000_000)"), ("LATCHKEY_DETAIL", event.summary)]
    }

    /// Runs the hook when `event` is one of `alarms`; any other event runs nothing.
    public func handle(_ event: LockEvent) {
        guard case .doorLockAlarm(let code) = event.kind, let alarm = Self.alarms[code] else { return }
        log("alarm hook: \(alarm)")
        hooks.start(environment: environment(for: event, alarm: alarm))
    }
}
