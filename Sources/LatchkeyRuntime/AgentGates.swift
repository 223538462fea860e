import LatchkeyAgents
import LatchkeyManagers
import LatchkeyPosix
import LatchkeyTransport
import Logging

/// Puts each daemon's application layer behind its gate (M4, M5): the mode from the
/// configuration, suspend/resume through control commands and SIGTSTP/SIGCONT, alerts to
/// the log and the hook, reports to the timeline.
struct AgentGates {
    let control: ApplicationControl
    /// Kept alive with the daemon: the managers hold their delegates weakly.
    let retained: [AnyObject]
    let signals: [SignalWatch]

    static func phone(_ agent: PhoneAgent, lock: BluetoothAddress, settings: ExecutionSettings, loop: PosixEventLoop,
                      events: any AgentEventSink, logger: Logger) throws(RuntimeError) -> AgentGates {
        let gate = ApplicationGate(loop: loop, mode: settings.mode, capacity: settings.queueCapacity,
                                   wakeBudget: settings.wakeBudget)
        let alerts = HookAlertSink(command: settings.alertHook, log: { logger.notice("\($0)") })
        alerts.onHookFailure = { logger.warning("\($0)") }
        let recorder = AlertTimeline(next: alerts, events: events, role: "phone")
        let central = CentralGate(central: agent.central, peripherals: agent.central.retrievePeripherals(withIdentifiers: [lock]),
                                  gate: gate, alerts: recorder)
        do { try central.setMode(settings.mode) } catch {
            throw RuntimeError("execution mode \(settings.mode): \(error)")
        }
        let control = ApplicationControl(role: "phone", gate: gate, suspend: central.suspend, resume: central.resume,
                                         setMode: { mode in try central.setMode(mode) })
        return try finish(control, retained: [central, alerts, recorder], alerts: alerts, loop: loop, events: events,
                          logger: logger)
    }

    static func lock(_ agent: LockAgent, settings: ExecutionSettings, loop: PosixEventLoop, events: any AgentEventSink,
                     logger: Logger) throws(RuntimeError) -> AgentGates {
        let gate = ApplicationGate(loop: loop, mode: settings.mode, capacity: settings.queueCapacity,
                                   wakeBudget: settings.wakeBudget)
        if settings.fastAdvertising {
            agent.peripheral.advertisingSchedule = AdvertisingSchedule(slowInterval: agent.configuration.advertisingInterval)
        }
        let peripheral = PeripheralGate(manager: agent.peripheral, gate: gate)
        peripheral.setMode(settings.mode)
        let control = ApplicationControl(role: "lock", gate: gate, suspend: peripheral.suspend, resume: peripheral.resume,
                                         setMode: { mode in peripheral.setMode(mode) })
        return try finish(control, retained: [peripheral], alerts: nil, loop: loop, events: events, logger: logger)
    }

    private static func finish(_ control: ApplicationControl, retained: [AnyObject], alerts: HookAlertSink?,
                               loop: PosixEventLoop, events: any AgentEventSink, logger: Logger) throws(RuntimeError)
        -> AgentGates
    {
        control.report(to: events, logger: logger)
        do {
            var signals = try control.installSignals(on: loop)
            if let alerts { signals.append(try loop.onSignal(.child) { alerts.reap() }) }
            return AgentGates(control: control, retained: retained, signals: signals)
        } catch {
            throw RuntimeError("signal handlers: \(error)")
        }
    }
}

/// Puts each alert on the timeline too (`<role>.alert`), then passes it on.
final class AlertTimeline: ConnectionAlertSink {
    let next: any ConnectionAlertSink
    let events: any AgentEventSink
    let role: String
    init(next: any ConnectionAlertSink, events: any AgentEventSink, role: String) {
        self.next = next; self.events = events; self.role = role
    }
    func raise(_ alert: ConnectionAlert) {
        events.emit(AgentEvent("\(role).alert", time: alert.time,
                               [("device", "\(alert.device)"), ("event", alert.event.rawValue), ("detail", alert.detail)]))
        next.raise(alert)
    }
}
