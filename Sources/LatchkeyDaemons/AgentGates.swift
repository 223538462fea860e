import LatchkeyAgents
import LatchkeyCentral
import LatchkeyControl
import LatchkeyEvents
import LatchkeyLockAgent
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeyPhoneAgent
import LatchkeyPosix
import LatchkeySettings
import LatchkeyTransport
import Logging

/// Puts each daemon's application layer behind its gate: the mode from the
/// configuration, suspend/resume through control commands and SIGTSTP/SIGCONT, alerts to
/// the log and the hook, reports to the timeline, and the agent's wake-up work marked
/// against the gate's budget.
final class AgentGates {
    let control: ApplicationControl
    /// Kept alive with the daemon: the managers hold their delegates weakly.
    let retained: [AnyObject]
    /// The alert hook's processes, reaped on SIGCHLD; nil without `execution.alert_hook`.
    private let hooks: HookProcesses?
    private(set) var signals: [SignalWatch] = []

    private init(control: ApplicationControl, retained: [AnyObject], hooks: HookProcesses?) {
        self.control = control; self.retained = retained; self.hooks = hooks
    }

    static func phone(_ agent: PhoneAgent, lock: BluetoothAddress, settings: ExecutionSettings, loop: any EventLoop,
                      events: any AgentEventSink, logger: Logger) throws(RuntimeError) -> AgentGates {
        let gate = ApplicationGate(loop: loop, mode: settings.mode, capacity: settings.queueCapacity,
                                   wakeBudget: settings.wakeBudget)
        let alerts = HookAlertSink(command: settings.alertHook, loop: loop, log: { logger.notice("\($0)") })
        alerts.onHookFailure = { logger.warning("\($0)") }
        let recorder = AlertTimeline(next: alerts, events: events, role: .phone)
        let central = CentralGate(central: agent.central, peripherals: agent.central.retrievePeripherals(withIdentifiers: [lock]),
                                  gate: gate, alerts: recorder)
        do { try central.setMode(settings.mode) } catch {
            throw RuntimeError("execution mode \(settings.mode): \(error)")
        }
        agent.backgroundTasks.gate = gate
        let control = ApplicationControl(role: .phone, gate: gate, suspend: central.suspend, resume: central.resume,
                                         setMode: { mode in try central.setMode(mode) })
        control.report(to: events, logger: logger)
        return AgentGates(control: control, retained: [central, alerts, recorder], hooks: alerts.hooks)
    }

    static func lock(_ agent: LockAgent, settings: ExecutionSettings, loop: any EventLoop, events: any AgentEventSink,
                     logger: Logger) -> AgentGates {
        let gate = ApplicationGate(loop: loop, mode: settings.mode, capacity: settings.queueCapacity,
                                   wakeBudget: settings.wakeBudget)
        if settings.fastAdvertising {
            agent.peripheral.advertisingSchedule = AdvertisingSchedule(slowInterval: agent.configuration.advertisingInterval)
        }
        let peripheral = PeripheralGate(manager: agent.peripheral, gate: gate)
        peripheral.setMode(settings.mode)
        agent.backgroundTasks.gate = gate
        let control = ApplicationControl(role: .lock, gate: gate, suspend: peripheral.suspend, resume: peripheral.resume,
                                         setMode: { mode in peripheral.setMode(mode) })
        control.report(to: events, logger: logger)
        // Jam, lockout and forced door run the alert hook (LockAlarmHook).
        let alarms = settings.alertHook.map { LockAlarmHook(command: $0, loop: loop, log: { logger.notice("\($0)") }) }
        if let alarms {
            alarms.hooks.onFailure = { logger.warning("\($0)") }
            agent.onLogged = { alarms.handle($0) }
        }
        return AgentGates(control: control, retained: [peripheral] + (alarms.map { [$0] } ?? []), hooks: alarms?.hooks)
    }

    /// SIGTSTP/SIGCONT suspend and resume the application layer; SIGCHLD reaps alert hooks.
    func installSignals(on loop: PosixEventLoop) throws(RuntimeError) {
        do {
            signals += try control.installSignals(on: loop)
            if let hooks { signals.append(try loop.onSignal(.child) { hooks.reap() }) }
        } catch {
            throw RuntimeError("signal handlers: \(error)")
        }
    }

    /// Gives the signals back their previous disposition.
    func cancelSignals() {
        for s in signals { s.cancel() }
        signals = []
    }
}

/// Puts each alert on the timeline too (`<role>.alert`), then passes it on.
final class AlertTimeline: ConnectionAlertSink {
    let next: any ConnectionAlertSink
    let events: any AgentEventSink
    let role: AgentRole
    init(next: any ConnectionAlertSink, events: any AgentEventSink, role: AgentRole) {
        self.next = next; self.events = events; self.role = role
    }
    func raise(_ alert: ConnectionAlert) {
        events.emit(AgentEvent(.alert(role, device: "\(alert.device)", event: alert.event.rawValue,
                                      detail: alert.detail),
                               time: alert.time))
        next.raise(alert)
    }
}
