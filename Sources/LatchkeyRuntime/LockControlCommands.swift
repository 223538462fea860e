import LatchkeyAgents
import LatchkeySecurity

/// The lock agent's local control socket (`<state_directory>/control.sock`, reachable only
/// by the service user and root through the 0700 state directory): the "secure side" that
/// opens pairing windows (docs/LOCK-RULES.md rule 3).
///
///     pair SECONDS ROLE ARRIVAL [NAME...]   open a window; ROLE admin|user, ARRIVAL yes|no
///                                            (yes only with admin: a user key never has it)
///     fingerprint                            the lock's identity fingerprint
///
/// (`status`, `suspend`, `resume` and `execution` are answered before these: ControlDispatcher.)
///
/// `pair` answers "note ..." lines while the window is open, then "ok paired key N ..." or
/// "error ...". Closing the connection early does not close the window: it times out.
enum LockControlCommands {
    static let usage = "pair SECONDS admin|user yes|no [NAME], fingerprint"

    /// The lock's part of `status`.
    static func status(_ agent: LockAgent) -> String {
        "lock=\(agent.controller.lockState) door=\(agent.controller.doorState) "
            + "operating_mode=\(agent.controller.operatingMode) transport_refusals=\(agent.transportRefusals) "
            + "store=\(agent.storeFaults.isEmpty ? "ok" : agent.storeFaults.joined(separator: ","))"
    }

    /// Everything the lock daemon's control socket answers.
    static func dispatcher(_ agent: LockAgent, application: ApplicationControl) -> ControlDispatcher {
        ControlDispatcher(application: application, agentStatus: { status(agent) },
                          agentCommands: { handle($0, agent: agent, reply: $1) }, agentUsage: usage)
    }

    /// False when `words` is not one of these commands.
    static func handle(_ words: [String], agent: LockAgent, reply: @escaping (String) -> Void) -> Bool {
        switch words.first {
        case "pair":
            guard words.count >= 4, let seconds = Int(words[1]), (1...600).contains(seconds),
                  let role = KeyRole(rawValue: words[2]), ["yes", "no"].contains(words[3]) else {
                reply("error usage: pair SECONDS(1...600) admin|user yes|no [NAME]")
                return true
            }
            if let refusal = arrivalUnlockRefusal(role: role, arrival: words[3] == "yes") {
                reply("error \(refusal)")
                return true
            }
            let name = words.count > 4 ? words[4...].joined(separator: " ") : nil
            let offer = PairingOffer(role: role, mayRequestArrivalUnlock: words[3] == "yes", name: name)
            let opened = agent.openPairingWindow(for: .seconds(seconds), offer: offer) { outcome in
                switch outcome {
                case .paired(let key, let code):
                    reply("ok paired key \(key.id) name=\(key.name) role=\(key.role.rawValue) "
                          + "arrival=\(key.mayRequestArrivalUnlock ? "yes" : "no") code=\(code)")
                case .closedUnused:
                    reply("error the pairing window closed with no phone paired")
                }
            }
            guard opened else {
                reply(agent.lockFingerprint == nil ? "error this lock has no pairing set up"
                                                   : "error a pairing window is open already")
                return true
            }
            reply("note pairing window open for \(seconds) s (role \(role.rawValue)); "
                  + "lock fingerprint \(agent.lockFingerprint ?? "?")")
        case "fingerprint":
            if let f = agent.lockFingerprint { reply("ok \(f)") } else { reply("error this lock has no pairing set up") }
        default:
            return false
        }
        return true
    }
}
