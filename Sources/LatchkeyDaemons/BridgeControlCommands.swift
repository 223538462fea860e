import LatchkeyAgents
import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyStore

/// What the lock's control socket adds for a bridge (`latchkey mqtt`): `events FROM`, `follow`,
/// `state`, `bridge lock|unlock` (as the key `bridge_key_id` names, never one the caller
/// picks: LockAgent.bridgeCommand) and `bridge wrong-code` (a failure of that key in its own
/// lockout count). A peer other than the agent's user and root gets these and `status`,
/// nothing else (ControlDispatcher). Each command and its answers: docs/CONFIGURATION.md,
/// "Execution modes, suspension and alerts". The cursor is the reader's: sequence numbers
/// never repeat, so a bridge resumes exactly after the last event it delivered.
final class BridgeControlCommands {
    static let usage = "events FROM, follow, state, bridge lock|unlock|wrong-code"
    /// What a restricted peer (the bridge's user) may send on the lock's socket.
    static let peerCommands = ["status", "events", "follow", "state", "bridge"]
    /// Events per `events` answer: bounded, so a 10,000-event backlog never fills the socket's queue.
    static let page = 200
    /// Followers kept; a bridge that reconnects follows again, and the oldest is dropped.
    static let maximumFollowers = 8

    let agent: LockAgent
    /// `bridge_key_id` from lock.yaml: the key every `bridge` command acts as; nil refuses them.
    let bridgeKey: UInt32?
    let read: (_ from: UInt64, _ limit: Int) throws -> [LoggedEvent]
    private var followers: [(String) -> Void] = []

    init(agent: LockAgent, bridgeKey: UInt32?, read: @escaping (_ from: UInt64, _ limit: Int) throws -> [LoggedEvent]) {
        self.agent = agent
        self.bridgeKey = bridgeKey
        self.read = read
        let previous = agent.onLogged
        agent.onLogged = { [weak self] event in
            previous?(event)
            self?.logged()
        }
    }

    private func logged() {
        let sequence = agent.statusFrame.lastEventSequence
        for follower in followers { follower("logged \(sequence)") }
    }

    /// False when `words` is not one of these commands.
    func handle(_ words: [String], reply: @escaping (String) -> Void) -> Bool {
        // The household's log and the lock's state go to the bridge only as its key, while that
        // key is current: revoking it cuts the bridge off from reading as from acting.
        if ["events", "state", "follow"].contains(words.first ?? "") {
            guard let key = bridgeKey else {
                reply("error this lock names no key for the bridge: add bridge_key_id to lock.yaml"); return true
            }
            if let refusal = agent.bridgeReadRefusal(keyID: key) { reply("error \(refusal)"); return true }
        }
        switch words.first {
        case "events":
            guard words.count == 2, let from = UInt64(words[1]) else { reply("error usage: events FROM"); return true }
            do {
                let rows = try read(from, Self.page)
                for row in rows { reply("event \(row.sequence) \(AuditEventJSON.encode(row))") }
                let next = rows.last.map { $0.sequence + 1 } ?? from
                reply("ok events next=\(next) last=\(agent.statusFrame.lastEventSequence)")
            } catch {
                reply("error the audit log cannot be read: \(error)")
            }
        case "state":
            guard words.count == 1 else { reply("error usage: state (no arguments)"); return true }
            let c = agent.controller
            reply("ok lock=\(c.lockState) door=\(c.doorState) actuator=\(c.actuatorEnabled ? "enabled" : "disabled")")
        case "follow":
            guard words.count == 1 else { reply("error usage: follow (no arguments)"); return true }
            if followers.count >= Self.maximumFollowers { followers.removeFirst() }
            followers.append(reply)
            reply("ok following last=\(agent.statusFrame.lastEventSequence)")
        case "bridge":
            guard words.count == 2, ["lock", "unlock", "wrong-code"].contains(words[1]) else {
                reply("error usage: bridge lock|unlock|wrong-code (the key is bridge_key_id in lock.yaml)"); return true
            }
            guard let key = bridgeKey else {
                reply("error this lock names no key for the bridge: add bridge_key_id to lock.yaml"); return true
            }
            if words[1] == "wrong-code" {
                // A wrong unlock code the bridge checked: a failure of its key (`LockAgent.bridgeWrongCode`, `BridgeEntry`).
                switch agent.bridgeWrongCode(keyID: key) {
                case .success(let lockout?): reply("ok counted key=\(key) locked_out_seconds=\(lockout.duration.components.seconds)")
                case .success(nil): reply("ok counted key=\(key)")
                case .failure(let refusal): reply("error \(refusal)")
                }
                return true
            }
            switch agent.bridgeCommand(words[1] == "lock" ? .lock : .unlock, keyID: key) {
            case .success(let decision): reply("ok accepted decision=\(decision.map { "\($0.rawValue)" } ?? "none")")
            case .failure(let refusal): reply("error \(refusal)")
            }
        default:
            return false
        }
        return true
    }
}

/// One audit event as the bridge publishes it: a JSON object with its sequence number, the
/// wall-clock time it was stored, what happened, who and how, and the states after it.
enum AuditEventJSON {
    static func encode(_ logged: LoggedEvent) -> String {
        let e = logged.event
        var fields: [(String, String)] = [
            ("seq", "\(logged.sequence)"),
            ("time", seconds(logged.wallNanos)),
        ]
        func text(_ k: String, _ v: String) { fields.append((k, jsonString(v))) }
        switch e.kind {
        case .lockOperation(let r):
            text("kind", "lock_operation"); operation(r, into: &fields)
        case .lockOperationError(let r, let error):
            text("kind", "lock_operation_error"); operation(r, into: &fields); text("error", "\(error)")
        case .doorLockAlarm(let code): text("kind", "alarm"); text("alarm", "\(code)")
        case .doorStateChange(let door): text("kind", "door_state"); text("door_state", "\(door)")
        case .lockUserChange(let c): text("kind", "key_change"); text("change", "\(c.change)"); fields.append(("key", "\(c.key.rawValue)"))
        case .operatingModeChange(let c): text("kind", "operating_mode"); text("mode", "\(c.mode)")
        case .suspectedRelay(let r): text("kind", "suspected_relay"); fields.append(("who", "\(r.who.rawValue)"))
        }
        text("lock", "\(e.lockStateAfter)")
        text("door", "\(e.doorState)")
        text("summary", e.summary)
        return "{" + fields.map { "\(jsonString($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    private static func operation(_ r: LockOperationRecord, into fields: inout [(String, String)]) {
        fields.append(("operation", r.operation.map { jsonString("\($0)") } ?? "null"))
        fields.append(("source", jsonString("\(r.source)")))
        fields.append(("who", r.who.map { "\($0.rawValue)" } ?? "null"))
    }

    /// Unix seconds with millisecond decimals, without Foundation.
    private static func seconds(_ nanos: Int64) -> String {
        let ms = nanos / 1_000_000
        let frac = String(ms % 1000)
        return "\(ms / 1000)." + String(repeating: "0", count: 3 - frac.count) + frac
    }
}
