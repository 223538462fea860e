import LatchkeyAgents
import LatchkeyMQTT
import LatchkeyTransport

/// One lock behind the bridge: its audit log onto `<prefix>/events` from the durable cursor,
/// its state retained, its availability, Home Assistant discovery, and commands from
/// `<prefix>/set` through the `CommandGate` to the lock's control socket, answered on
/// `<prefix>/result`.
package final class LockBridge: BridgedAgent {
    let lock: BridgedLock
    let topics: HomeAssistantDiscovery.LockTopics
    private let link: any AgentLink
    private unowned let bridge: Bridge
    private let discovery: HomeAssistantDiscovery
    private let gate: CommandGate
    private var flood: CommandFlood
    /// `lock` has a bucket of its own: a flood of unlock guesses must not keep Home
    /// Assistant from locking the door.
    private var lockFlood: CommandFlood
    /// The last rate refusal logged: a flood is one log line a minute, not one per message.
    private var floodLogged: Instant?
    private let cursorFile: CursorFile
    private let wallNow: () -> Double
    private let resultExpiry: UInt32
    private(set) var cursor: EventCursor
    private(set) var agentOnline = false
    private var reading = false
    /// More events were logged while a read was under way.
    private var readAgain = false
    private var lastEvent: String?
    private var followBackoff = ReconnectBackoff(cap: .seconds(30))
    private var refollow: Scheduled?
    /// Publications in flight at most: libmosquitto queues the rest in memory anyway, and a
    /// 10,000-event backlog should not all sit there.
    static let window = 100

    package init(lock: BridgedLock, link: any AgentLink, bridge: Bridge, discovery: HomeAssistantDiscovery,
         maximumCommandAge: Duration, resultExpiry: UInt32, cursorFile: CursorFile, wallNow: @escaping () -> Double) throws {
        self.lock = lock
        self.link = link
        self.bridge = bridge
        self.discovery = discovery
        self.cursorFile = cursorFile
        self.wallNow = wallNow
        self.resultExpiry = resultExpiry
        topics = .init(prefix: lock.topicPrefix)
        gate = CommandGate(enabled: lock.commands, maximumAge: maximumCommandAge, unlockCode: lock.unlockCode)
        flood = CommandFlood(perMinute: lock.commandsPerMinute)
        lockFlood = CommandFlood(perMinute: lock.commandsPerMinute)
        cursor = EventCursor(delivered: try cursorFile.load())
        bridge.add(self)
        bridge.subscribe(topics.command) { [weak self] in self?.command($0) }
    }

    func start() { follow() }

    // MARK: The agent

    private func follow() {
        link.stream("follow", line: { [weak self] line in
            guard let self else { return }
            if line.hasPrefix("ok following") {
                self.agentOnline = true
                self.followBackoff.reset()
                self.bridge.log(.info, "\(self.lock.name): agent reached at its control socket")
                self.publishAvailability()
                self.refresh()
            } else if line.hasPrefix("logged") {
                self.refresh()
            }
        }, closed: { [weak self] why in
            guard let self else { return }
            if self.agentOnline { self.bridge.log(.warning, "\(self.lock.name): \(why)") }
            self.agentOnline = false
            self.publishAvailability()
            self.refollow = self.bridge.loop.schedule(after: self.followBackoff.next()) { [weak self] in self?.follow() }
        })
    }

    /// Reads and publishes what the broker has not acknowledged yet, then the state.
    private func refresh() {
        guard agentOnline, bridge.isConnected else { return }
        guard !reading else { readAgain = true; return }
        guard cursor.inFlightCount < Self.window else { return }
        reading = true
        readAgain = false
        var rows: [(UInt64, String)] = []
        link.request("events \(cursor.nextToRead)", line: { line in
            // "event SEQ {json}"
            let parts = line.split(separator: " ", maxSplits: 2)
            guard parts.count == 3, parts[0] == "event", let seq = UInt64(parts[1]) else { return }
            rows.append((seq, String(parts[2])))
        }, done: { [weak self] ok, final in
            guard let self else { return }
            self.reading = false
            guard ok else {
                self.bridge.log(.warning, "\(self.lock.name): reading the audit log: \(final)")
                return
            }
            self.publish(rows)
            let fields = replyFields(final)
            let more = rows.count > 0 && (UInt64(fields["last"] ?? "") ?? 0) >= self.cursor.nextToRead
            if more || self.readAgain { self.refresh() }
            self.refreshState()
        })
    }

    private func publish(_ rows: [(UInt64, String)]) {
        for (seq, json) in rows {
            // Stops at the first failure: the rest is read again after the next connection.
            guard let id = bridge.publish(MQTTMessage(topic: topics.events, text: json, qos: 1, retain: false),
                                          acknowledgedBy: self) else { return }
            cursor.published(seq, messageID: id)
            lastEvent = json
        }
        if let lastEvent, !rows.isEmpty {
            bridge.publish(MQTTMessage(topic: topics.lastEvent, text: lastEvent, qos: 1, retain: true))
        }
    }

    private func refreshState() {
        link.request("state", line: { _ in }, done: { [weak self] ok, final in
            guard let self, ok else { return }
            let f = replyFields(final)
            if let state = Self.lockState(lock: f["lock"] ?? "", actuator: f["actuator"] ?? "") {
                self.bridge.publish(MQTTMessage(topic: self.topics.state, text: state.rawValue, qos: 1, retain: true))
            }
            if let door = Self.door(f["door"] ?? "") {
                self.bridge.publish(MQTTMessage(topic: self.topics.door, text: door, qos: 1, retain: true))
            }
            self.bridge.publish(MQTTMessage(topic: self.topics.problem, text: f["actuator"] == "disabled" ? "ON" : "OFF",
                                            qos: 1, retain: true))
        })
    }

    /// Matter's lock state and the actuator's health as Home Assistant's lock state. A bolt
    /// stopped between its positions reads as unlocked (not secured) unless the actuator
    /// was disabled by a jam; nothing is published while the state is not measured yet.
    static func lockState(lock: String, actuator: String) -> HomeAssistantDiscovery.LockStatePayload? {
        if actuator == "disabled" { return .jammed }
        switch lock {
        case "locked": return .locked
        case "unlocked", "notFullyLocked": return .unlocked
        case "locking": return .locking
        case "unlocking": return .unlocking
        default: return nil
        }
    }

    static func door(_ state: String) -> String? {
        switch state {
        case "open", "forcedOpen", "ajar": "open"
        case "closed": "closed"
        default: nil
        }
    }

    private func publishAvailability() {
        bridge.publish(MQTTMessage(topic: topics.availability, text: agentOnline ? Bridge.online : Bridge.offline,
                                   qos: 1, retain: true))
    }

    // MARK: The session

    func sessionStarted() {
        for m in discovery.messages(for: lock) { bridge.publish(m) }
        publishAvailability()
        if let lastEvent { bridge.publish(MQTTMessage(topic: topics.lastEvent, text: lastEvent, qos: 1, retain: true)) }
        refresh()
    }

    func sessionEnded() { cursor.sessionEnded() }

    func acknowledged(_ messageID: Int) {
        guard let delivered = cursor.acknowledged(messageID) else { return }
        do { try cursorFile.save(delivered) } catch {
            bridge.log(.error, "\(lock.name): cannot store the event cursor (\(error)); events after \(delivered) "
                       + "will be published again after a restart")
        }
        if cursor.inFlightCount < Self.window / 2 { refresh() }
    }

    // MARK: Commands

    private func command(_ message: MQTTMessage) {
        if message.retain {
            // Cleared so that no later subscriber (or restart) sees it as a command.
            if !message.payload.isEmpty { bridge.publish(MQTTMessage(topic: message.topic, payload: [], qos: 1, retain: true)) }
            else { return }  // our own clearing, echoed back by a broker without no-local
        }
        // Only what would cost the lock something is charged (a command that passed the gate,
        // a code guess): junk that anyone can publish is refused for free, so it cannot use up
        // Home Assistant's allowance.
        let checked = gate.check(message.payload, retained: message.retain, now: wallNow())
        let charged: BridgeAction? = switch checked {
        case .success(let (action, _)): action
        case .failure(.wrongCode): .unlock
        case .failure: nil
        }
        if let charged, let refusal = charged == .lock ? lockFlood.admit(at: bridge.loop.now) : flood.admit(at: bridge.loop.now) {
            if floodLogged.map({ bridge.loop.now - $0 >= .seconds(60) }) ?? true {
                floodLogged = bridge.loop.now
                bridge.log(.warning, "\(lock.name): command refused: \(refusal) (said once a minute)")
            }
            answer(id: CommandGate.commandID(message.payload), action: nil, ok: false, detail: "\(refusal)")
            return
        }
        if case .success(let (_, command)) = checked,
           let refusal = flood.firstTime(command, wallNow: wallNow(), maximumAge: gate.maximumAge) {
            bridge.log(.notice, "\(lock.name): command refused: \(refusal)")
            answer(id: command.id, action: nil, ok: false, detail: "\(refusal)")
            return
        }
        switch checked {
        case .failure(.wrongCode):
            reportWrongCode(message)
        case .failure(let refusal):
            bridge.log(.notice, "\(lock.name): command refused: \(refusal)")
            answer(id: CommandGate.commandID(message.payload), action: nil, ok: false, detail: "\(refusal)")
        case .success(let (action, command)):
            // The lock acts as the key its own configuration names for the bridge (bridge_key_id).
            link.request("bridge \(action.rawValue)", line: { _ in }, done: { [weak self] ok, final in
                guard let self else { return }
                let detail = final.hasPrefix("ok ") ? String(final.dropFirst(3)) : String(final.dropFirst(final.hasPrefix("error ") ? 6 : 0))
                self.bridge.log(ok ? .info : .notice, "\(self.lock.name): \(action.rawValue) from MQTT: \(final)")
                // Sent → the lock's answer, which comes after the decision is journalled and the
                // actuator line has changed: what scripts/mqtt-bench reports.
                let ms = command.timestamp.map { (self.wallNow() - $0) * 1000 }
                self.answer(id: command.id, action: action, ok: ok, detail: detail, milliseconds: ms)
            })
        }
    }

    /// A wrong unlock code counts against the bridge's key on the lock (`bridge wrong-code`):
    /// the lock's per-key lockout, not a count of the bridge's own, so that after the limit
    /// the lock refuses the bridge's unlocks whatever the code. While it is locked out the
    /// lock answers a wrong code as it answers a right one — locked out — so neither the
    /// result topic nor the retained state tells a guess that was right.
    private func reportWrongCode(_ message: MQTTMessage) {
        let id = CommandGate.commandID(message.payload)
        // Answered like a command the lock decided, `ms` included: the answer's shape must not
        // tell a wrong code from a right one the lock refused.
        var sent: Double?
        if case .success(let c) = CommandGate.parse(message.payload, retained: false, now: wallNow(), maximumAge: gate.maximumAge) {
            sent = c.timestamp
        }
        link.request("bridge wrong-code", line: { _ in }, done: { [weak self] ok, final in
            guard let self else { return }
            let detail: String
            if ok {
                let lockedFor = replyFields(final)["locked_out_seconds"]
                detail = "wrong code" + (lockedFor.map { "; the bridge's key is locked out for \($0) s" } ?? "")
            } else {
                detail = String(final.dropFirst(final.hasPrefix("error ") ? 6 : 0))
            }
            self.bridge.log(.notice, "\(self.lock.name): unlock from MQTT refused: wrong code (the lock: \(final))")
            self.answer(id: id, action: .unlock, ok: false, detail: detail,
                        milliseconds: sent.map { (self.wallNow() - $0) * 1000 })
        })
    }

    private func answer(id: String?, action: BridgeAction?, ok: Bool, detail: String, milliseconds: Double? = nil) {
        var fields = [("ok", ok ? "true" : "false"), ("detail", jsonString(detail)), ("ts", "\(Int(wallNow()))")]
        if let milliseconds { fields.append(("ms", "\((milliseconds * 1000).rounded() / 1000)")) }
        if let action { fields.insert(("action", jsonString(action.rawValue)), at: 0) }
        if let id { fields.insert(("id", jsonString(id)), at: 0) }
        let body = "{" + fields.map { "\(jsonString($0.0)):\($0.1)" }.joined(separator: ",") + "}"
        bridge.publish(MQTTMessage(topic: topics.result, text: body, qos: 1, retain: false, expirySeconds: resultExpiry))
    }
}
