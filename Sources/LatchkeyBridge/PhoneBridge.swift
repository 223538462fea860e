import LatchkeyAgents
import LatchkeyMQTT
import LatchkeyTransport

/// One phone agent behind the bridge: its presence (home/away) as a retained
/// `device_tracker` state, read from its `status` every `pollInterval` (the phone's socket
/// has no event stream), its availability, and the arrival intent (`<prefix>/arriving/set`,
/// checked like every command, then `arriving` on its socket: the arrival issue's intent).
final class PhoneBridge: BridgedAgent {
    let phone: BridgedPhone
    let topics: HomeAssistantDiscovery.PhoneTopics
    private let link: any AgentLink
    private unowned let bridge: Bridge
    private let discovery: HomeAssistantDiscovery
    private let maximumCommandAge: Duration
    private let wallNow: () -> Double
    private let pollInterval: Duration
    private var poll: Scheduled?
    /// Intents are bounded like a lock's commands (`CommandFlood`): rate and repeats.
    private var flood = CommandFlood(perMinute: BridgedLock.defaultCommandsPerMinute)
    private(set) var presence: String?
    private(set) var agentOnline = false

    init(phone: BridgedPhone, link: any AgentLink, bridge: Bridge, discovery: HomeAssistantDiscovery,
         maximumCommandAge: Duration, pollInterval: Duration = .seconds(5), wallNow: @escaping () -> Double) {
        self.phone = phone
        self.link = link
        self.bridge = bridge
        self.discovery = discovery
        self.maximumCommandAge = maximumCommandAge
        self.pollInterval = pollInterval
        self.wallNow = wallNow
        topics = .init(prefix: phone.topicPrefix)
        bridge.add(self)
        if phone.arrivalIntent { bridge.subscribe(topics.arriving) { [weak self] in self?.arriving($0) } }
    }

    func start() { check() }

    private func check() {
        link.request("status", line: { _ in }, done: { [weak self] ok, final in
            guard let self else { return }
            let online = ok
            let presence = replyFields(final)["presence"].flatMap(Self.trackerState)
            if online != self.agentOnline {
                self.agentOnline = online
                self.bridge.log(online ? .info : .warning, "\(self.phone.name): " + (online ? "agent reached" : final))
                self.publishAvailability()
            }
            if let presence, presence != self.presence {
                self.presence = presence
                self.publishPresence()
            }
            self.poll = self.bridge.loop.schedule(after: self.pollInterval) { [weak self] in self?.check() }
        })
    }

    /// The phone's presence (PresenceMachine) as Home Assistant's device_tracker state: in
    /// range of the door (linked, or its link lost for less than the grace period) is `home`;
    /// `away` is `not_home`; nothing is published before the phone knows (`unknown`).
    static func trackerState(_ presence: String) -> String? {
        switch presence {
        case "home", "leaving", "nearby", "arriving": "home"
        case "away": "not_home"
        default: nil
        }
    }

    private func publishAvailability() {
        bridge.publish(MQTTMessage(topic: topics.availability, text: agentOnline ? Bridge.online : Bridge.offline,
                                   qos: 1, retain: true))
    }

    private func publishPresence() {
        guard let presence else { return }
        bridge.publish(MQTTMessage(topic: topics.presence, text: presence, qos: 1, retain: true))
    }

    func sessionStarted() {
        for m in discovery.messages(for: phone) { bridge.publish(m) }
        publishAvailability()
        publishPresence()
    }

    func sessionEnded() {}
    func acknowledged(_ messageID: Int) {}

    private func arriving(_ message: MQTTMessage) {
        if message.retain && !message.payload.isEmpty {
            bridge.publish(MQTTMessage(topic: message.topic, payload: [], qos: 1, retain: true))
        }
        if message.retain && message.payload.isEmpty { return }
        if let refusal = flood.admit(at: bridge.loop.now) { return answer(ok: false, detail: "\(refusal)") }
        switch CommandGate.parse(message.payload, retained: message.retain, now: wallNow(), maximumAge: maximumCommandAge) {
        case .success(let command) where flood.firstTime(command, wallNow: wallNow(), maximumAge: maximumCommandAge) != nil:
            bridge.log(.notice, "\(phone.name): arrival intent refused: \(CommandRefusal.duplicate)")
            answer(ok: false, detail: "\(CommandRefusal.duplicate)")
        case .failure(let refusal):
            bridge.log(.notice, "\(phone.name): arrival intent refused: \(refusal)")
            answer(ok: false, detail: "\(refusal)")
        case .success(let command) where command.action != "arriving":
            answer(ok: false, detail: "unknown action '\(command.action)'")
        case .success:
            link.request("arriving", line: { _ in }, done: { [weak self] ok, final in
                self?.answer(ok: ok, detail: final)
            })
        }
    }

    private func answer(ok: Bool, detail: String) {
        let body = "{\"action\":\"arriving\",\"ok\":\(ok),\"detail\":\(jsonString(detail)),\"ts\":\(Int(wallNow()))}"
        bridge.publish(MQTTMessage(topic: topics.result, text: body, qos: 1, retain: false, expirySeconds: 60))
    }
}
