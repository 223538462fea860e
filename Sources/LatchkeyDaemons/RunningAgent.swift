import LatchkeyControl
import LatchkeyPosix

/// One agent daemon set up on a loop: `LockDaemon.run` / `PhoneDaemon.run` keep it until
/// SIGTERM or SIGINT; tests set it up on a loop of their own and drive it through its
/// control socket and signals, as a user would.
final class RunningAgent<Agent: AnyObject> {
    let agent: Agent
    let gates: AgentGates
    let control: LocalControlServer
    let controlPath: String
    /// Its `Type=notify` side (READY=1, the watchdog).
    let readiness: ServiceReadiness?
    /// The agent's side of shutting down (its `stop()`, the `*.stopping` event).
    let stopping: () -> Void
    /// What else must live as long as the daemon (transport, GPIO watcher, readiness).
    private let retained: [AnyObject?]
    private let closing: () -> Void
    private var closed = false

    init(agent: Agent, gates: AgentGates, control: LocalControlServer, controlPath: String,
         readiness: ServiceReadiness? = nil,
         stopping: @escaping () -> Void, retained: [AnyObject?], closing: @escaping () -> Void = {}) {
        self.agent = agent; self.gates = gates; self.control = control; self.controlPath = controlPath
        self.readiness = readiness
        self.stopping = stopping; self.retained = retained; self.closing = closing
    }

    /// Closes the control socket, gives the signals back, then whatever the daemon closes last.
    func close() {
        guard !closed else { return }
        closed = true
        control.close()
        gates.cancelSignals()
        closing()
    }
}
