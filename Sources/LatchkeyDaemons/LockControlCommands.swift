import LatchkeyAgents
import LatchkeyControl
import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeyStore

/// The lock agent's local control socket (`<state_directory>/control.sock`, reachable only by
/// the service user and root): the "secure side" that opens pairing windows (docs/LOCK-RULES.md
/// rule 3): `pair SECONDS ROLE ARRIVAL [NAME...]`, `pair-confirm CODE`, `pair-reject`,
/// `fingerprint`; `status`, `suspend`, `resume` and `execution` are answered before these
/// (ControlDispatcher). `pair` answers "note ..." lines, "confirm key=N name=... code=C" when a
/// key waits for the owner, then "ok paired key N ..." or "error ...". Closing the connection
/// does not close the window: it times out, and a key nobody confirmed is not enrolled.
enum LockControlCommands {
    static let usage = "pair SECONDS admin|user yes|no [NAME], pair-confirm CODE, pair-reject, fingerprint"

    /// The lock's part of `status`. `advertisingWhileLinked`: whether the controller
    /// advertises beside a linked central (docs/SECURITY.md, "Strangers"), nil while no
    /// central has linked yet to tell; `latchkey doctor` reads it. `store`: the SQLite store
    /// behind the agent, whose WAL says `wal=` (`AgentStore.walStatus`).
    static func status(_ agent: LockAgent, advertisingWhileLinked: Bool? = true, store: AgentStore? = nil) -> String {
        "lock=\(agent.controller.lockState) door=\(agent.controller.doorState) "
            + "operating_mode=\(agent.controller.operatingMode) transport_refusals=\(agent.transportRefusals) "
            + "store=\(agent.storeFaults.isEmpty ? "ok" : agent.storeFaults.joined(separator: ",")) "
            + "advertising_while_linked=\(advertisingWhileLinked.map { $0 ? "yes" : "no" } ?? "unknown")"
            + " pairing_writes=\(agent.pairingCounts.requests) pairing_refused=\(agent.pairingCounts.refused)"
            + " pairing_not_enrolled=\(agent.pairingCounts.notEnrolled)"
            + " scheduling=\(RealtimePriority.statusField)"
            + (store.map { " wal=\($0.walStatus)" } ?? "")
    }

    /// Everything the lock daemon's control socket answers.
    static func dispatcher(_ agent: LockAgent, application: ApplicationControl,
                           advertisingWhileLinked: @escaping () -> Bool? = { true },
                           store: AgentStore? = nil) -> ControlDispatcher {
        ControlDispatcher(application: application,
                          agentStatus: { status(agent, advertisingWhileLinked: advertisingWhileLinked(), store: store) },
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
            if let name, let problem = PairingName.problem(name) {
                reply("error the name is refused: \(problem)")
                return true
            }
            let offer = PairingOffer(role: role, mayRequestArrivalUnlock: words[3] == "yes", name: name)
            let opened = agent.openPairingWindow(for: .seconds(seconds), offer: offer, asked: { pending in
                reply("confirm key=\(pending.key.id) name=\(PairingName.escaped(pending.key.name)) "
                      + "code=\(pending.comparisonCode)")
            }, done: { outcome in
                switch outcome {
                case .paired(let key, let code):
                    reply("ok paired key \(key.id) name=\(PairingName.escaped(key.name)) role=\(key.role.rawValue) "
                          + "arrival=\(key.mayRequestArrivalUnlock ? "yes" : "no") code=\(code)")
                case .closedUnused:
                    reply("error the pairing window closed with no phone paired")
                case .notEnrolled(let pending, let reason):
                    reply("error key \(pending.key.id) (\(PairingName.escaped(pending.key.name))) not enrolled: "
                          + "\(reason.rawValue); the window is closed")
                }
            })
            guard opened else {
                reply(agent.lockFingerprint == nil ? "error this lock has no pairing set up"
                                                   : "error a pairing window is open already")
                return true
            }
            reply("note pairing window open for \(seconds) s (role \(role.rawValue)); "
                  + "lock fingerprint \(agent.lockFingerprint ?? "?")")
        case "pair-confirm":
            guard words.count == 2 else { reply("error usage: pair-confirm CODE"); return true }
            switch agent.confirmPairing(code: words[1]) {
            case nil: reply("error no pairing waits for confirmation")
            case .paired(let key, _)?: reply("ok enrolled key \(key.id)")
            case .notEnrolled(_, let reason)?: reply("error not enrolled: \(reason.rawValue); the window is closed")
            case .closedUnused?: reply("error the pairing window closed with no phone paired")
            }
        case "pair-reject":
            guard words.count == 1 else { reply("error usage: pair-reject"); return true }
            if agent.rejectPairing() == nil { reply("error no pairing waits for confirmation") } else {
                reply("ok refused; the window is closed")
            }
        case "fingerprint":
            if let f = agent.lockFingerprint { reply("ok \(f)") } else { reply("error this lock has no pairing set up") }
        default:
            return false
        }
        return true
    }
}
