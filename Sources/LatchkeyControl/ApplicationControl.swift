import LatchkeyAgents
import LatchkeyEvents
import LatchkeyManagers
import LatchkeyPosix
import LatchkeyTransport
import Logging

/// Suspend, resume and mode switching for a daemon's application layer: the control
/// commands (`suspend`, `resume`, `execution foreground|background`), SIGTSTP/SIGCONT, and the
/// gate's reports turned into timeline events and log lines.
package final class ApplicationControl {
    package let role: AgentRole
    package let suspend: () -> Void
    package let resume: () -> Void
    package let setMode: (ExecutionMode) throws -> Void
    package let gate: ApplicationGate

    package init(role: AgentRole, gate: ApplicationGate, suspend: @escaping () -> Void, resume: @escaping () -> Void,
         setMode: @escaping (ExecutionMode) throws -> Void) {
        self.role = role; self.gate = gate; self.suspend = suspend; self.resume = resume; self.setMode = setMode
    }

    /// Sends the gate's reports to `events` (`<role>.app_*`) and the log.
    package func report(to events: any AgentEventSink, logger: Logger) {
        let loop = gate.loop
        let role = self.role
        gate.onReport = { report in
            func emit(_ event: Event) {
                events.emit(AgentEvent(event, time: loop.now))
            }
            switch report {
            case .suspended:
                emit(.appSuspended(role))
            case .resumed(let delivered, let lost):
                emit(.appResumed(role, delivered: delivered, lost: lost))
                if lost > 0 { logger.warning("resumed after losing \(lost) events to a full queue") }
            case .overflow(let event, let capacity, let lost):
                emit(.appQueueOverflow(role, event: event, capacity: capacity, lost: lost))
                logger.warning("event queue full (\(capacity)): \(event) not delivered (\(lost) lost so far)")
            case .woke(let event):
                emit(.appWoken(role, event: event))
            case .wakeHandled(let event, let duration):
                emit(.appWakeHandled(role, event: event, ms: duration))
                logger.info("wake-up for \(event) handled in \(duration.milliseconds) ms")
            case .wakeOverBudget(let event, let elapsed, let budget):
                emit(.appWakeOverBudget(role, event: event, ms: elapsed,
                                           budgetMs: budget))
                logger.warning("wake-up for \(event) over its \(budget.milliseconds) ms budget")
            }
        }
    }

    /// The commands handled here, for usage lines.
    package static let usage = "suspend, resume, execution foreground|background"

    /// The application layer's part of `status`.
    package var status: String {
        "execution=\(gate.mode.rawValue) suspended=\(gate.isSuspended) queued=\(gate.queuedEvents.count)"
    }

    /// Handles `suspend`, `resume` and `execution foreground|background`; false for any other
    /// command (`mode` is the lock's Matter operating mode, handled by the agent). Wrong
    /// arguments are answered with the usage and change nothing.
    package func handle(_ words: [String], reply: (String) -> Void) -> Bool {
        switch words.first {
        case "suspend", "resume":
            guard words.count == 1 else { reply("error usage: \(words[0]) (no arguments)"); return true }
            if words[0] == "suspend" { suspend() } else { resume() }
            reply("ok \(words[0] == "suspend" ? "suspended" : "resumed") mode=\(gate.mode.rawValue)")
        case "execution":
            guard words.count == 2, let mode = ExecutionMode(rawValue: words[1]) else {
                reply("error usage: execution foreground|background"); return true
            }
            do { try setMode(mode); reply("ok mode=\(mode.rawValue)") } catch { reply("error \(error)") }
        default:
            return false
        }
        return true
    }

    /// SIGTSTP suspends the application layer and SIGCONT resumes it; the process itself
    /// keeps running (its Bluetooth side must).
    package func installSignals(on loop: PosixEventLoop) throws -> [SignalWatch] {
        [try loop.onSignal(.terminalStop) { [weak self] in self?.suspend() },
         try loop.onSignal(.continue) { [weak self] in self?.resume() }]
    }
}
