import LatchkeyAgents
import LatchkeyControl
import LatchkeyPhoneAgent

/// The phone agent's commands on its control socket (`latchkey phone-ctl`), after the ones
/// every daemon takes (ControlDispatcher): `lock`, `unlock` (answered when the lock answers),
/// `mode normal|no-remote|passage` (admin keys), `probe N` (alternating unlock and lock),
/// `arriving` (an arrival intent: the next re-link may ask for one arrival unlock within the
/// window), and `fetch-log [FROM [LIMIT]]` (the lock's audit log from FROM, default 1, at most
/// LIMIT events, default 100, in one sealed reply, with what the transfer cost).
enum PhoneControlCommands {
    static let usage = "lock, unlock, mode normal|no-remote|passage, probe N, arriving, fetch-log [FROM [LIMIT]]"
    /// What a restricted peer (the MQTT bridge's user) may send: presence and the arrival
    /// intent, never a command the phone would seal with its key.
    static let peerCommands = ["status", "arriving"]

    /// The phone's part of `status`.
    static func status(_ agent: PhoneAgent) -> String {
        "presence=\(agent.presence.rawValue) linked=\(agent.isLinked) transport_refusals=\(agent.transportRefusals)"
            + (agent.keyRevoked ? " key=revoked" : "")  // the lock said so: the phone stopped asking
    }

    /// Everything the phone daemon's control socket answers.
    static func dispatcher(_ agent: PhoneAgent, application: ApplicationControl) -> ControlDispatcher {
        ControlDispatcher(application: application, agentStatus: { status(agent) },
                          agentCommands: { handle($0, agent: agent, reply: $1) }, agentUsage: usage)
    }

    /// False when `words` is not one of these commands.
    /// Between the bolt's report and the probe's next command: what a person takes at
    /// least to see the bolt moved and tap again. A command sent at the very moment of the
    /// report would wait for the challenge the phone reads then (`ChallengeReadAhead`).
    static let probePause = Duration.milliseconds(300)

    static func handle(_ words: [String], agent: PhoneAgent, reply: @escaping (String) -> Void) -> Bool {
        switch words.first {
        case "arriving":
            guard words.count == 1 else { reply("error usage: arriving (no arguments)"); return true }
            reply("ok arriving: \(agent.arrivalIntent())")
        case "lock", "unlock":
            guard words.count == 1 else { reply("error usage: \(words[0]) (no arguments)"); return true }
            agent.perform(words[0] == "lock" ? .lock : .unlock) { result in
                switch result {
                case .success: reply("ok \(words[0])")
                case .failure(let e): reply("error \(e)")
                }
            }
        case "mode":
            // Admin keys only: the lock refuses it from a user key (not authorized).
            let modes: [String: UInt8] = ["normal": 0, "no-remote": 3, "passage": 4]  // Matter OperatingMode
            guard words.count == 2, let mode = modes[words[1]] else {
                reply("error usage: mode normal|no-remote|passage"); return true
            }
            agent.setOperatingMode(mode) { result in
                switch result {
                case .success: reply("ok mode \(words[1])")
                case .failure(let e): reply("error \(e)")
                }
            }
        case "probe":
            // N authenticated commands, alternating unlock and lock. Each waits until the lock
            // reports the bolt at its target (a command during a movement is refused as busy),
            // then `probePause`, as a person's next tap would.
            guard words.count == 2, let n = Int(words[1]), (1...10_000).contains(n) else {
                reply("error usage: probe N (1...10000)"); return true
            }
            var failures = 0
            var waitingFor: UInt8?
            var continueWith: (() -> Void)?
            agent.onStatus = { frame in
                guard let target = waitingFor, frame.lockState == target else { return }
                waitingFor = nil
                let next = continueWith
                continueWith = nil
                agent.central.transport.loop.schedule(after: probePause) { next?() }
            }
            func step(_ i: Int) {
                guard i < n else {
                    agent.onStatus = nil
                    reply(failures == 0 ? "ok probe \(n) commands" : "error probe \(n) commands, \(failures) failed")
                    return
                }
                let unlock = i % 2 == 0
                agent.perform(unlock ? .unlock : .lock) { result in
                    switch result {
                    case .success:
                        waitingFor = unlock ? 2 : 1  // Matter LockState: Unlocked 2, Locked 1
                        continueWith = { step(i + 1) }
                    case .failure(let e):
                        failures += 1
                        reply("note command \(i): \(e)")
                        step(i + 1)
                    }
                }
            }
            step(0)
        case "fetch-log":
            fetchLog(words, agent: agent, reply: reply)
        default:
            return false
        }
        return true
    }
}
