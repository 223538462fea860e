import LatchkeyAgents
import LatchkeyMQTT

/// Home Assistant MQTT discovery for one lock or phone, following the Home Assistant 2024.12
/// documentation of the MQTT integration (pages "MQTT", "MQTT Lock", "MQTT Binary sensor",
/// "MQTT Sensor", "MQTT Device tracker", "MQTT Button"): one retained config message per
/// entity on `<discovery_prefix>/<component>/<node_id>/<object_id>/config`, every entity
/// naming the same `device` block, and two availability topics that must both say online
/// (`availability_mode: all`): the bridge's (its last will says offline) and the agent's.
public struct HomeAssistantDiscovery: Sendable {
    public var discoveryPrefix: String
    /// The bridge's availability topic (retained; the last will publishes "offline").
    public var bridgeAvailability: String
    public var softwareVersion: String

    public init(discoveryPrefix: String, bridgeAvailability: String, softwareVersion: String) {
        self.discoveryPrefix = discoveryPrefix
        self.bridgeAvailability = bridgeAvailability
        self.softwareVersion = softwareVersion
    }

    /// HA lock states, its default payloads (`state_locked` ...), as the bridge publishes them.
    public enum LockStatePayload: String, Sendable {
        case locked = "LOCKED", unlocked = "UNLOCKED", locking = "LOCKING", unlocking = "UNLOCKING"
        case jammed = "JAMMED", open = "OPEN"
    }

    /// The topics of one lock under its prefix.
    public struct LockTopics: Sendable {
        public let prefix: String
        public var state: String { prefix + "/state" }
        public var door: String { prefix + "/door" }
        public var problem: String { prefix + "/problem" }
        public var lastEvent: String { prefix + "/last_event" }
        public var events: String { prefix + "/events" }
        public var availability: String { prefix + "/availability" }
        public var command: String { prefix + "/set" }
        public var result: String { prefix + "/result" }
        public init(prefix: String) { self.prefix = prefix }
    }

    public struct PhoneTopics: Sendable {
        public let prefix: String
        public var presence: String { prefix + "/presence" }
        public var availability: String { prefix + "/availability" }
        public var arriving: String { prefix + "/arriving/set" }
        public var result: String { prefix + "/result" }
        public init(prefix: String) { self.prefix = prefix }
    }

    /// The retained discovery messages for `lock`, in a fixed order.
    public func messages(for lock: BridgedLock) -> [MQTTMessage] {
        let node = "latchkey_" + MQTTSettings.slug(lock.name)
        let t = LockTopics(prefix: lock.topicPrefix)
        let common = commonFields(node: node, name: lock.name, model: "Latchkey BLE lock", board: lock.board,
                                  agentAvailability: t.availability)
        // The template makes the payload CommandGate wants: the action, when it was sent, the code.
        var lockFields: [(String, String)] = [
            ("name", "null"), ("unique_id", str(node + "_lock")), ("object_id", str(node)),
            ("state_topic", str(t.state)), ("command_topic", str(t.command)),
            ("command_template", str("{\"action\":\"{{ value }}\",\"ts\":{{ now().timestamp() }},\"code\":\"{{ code }}\"}")),
            ("payload_lock", str("lock")), ("payload_unlock", str("unlock")),
            ("state_locked", str("LOCKED")), ("state_unlocked", str("UNLOCKED")), ("state_locking", str("LOCKING")),
            ("state_unlocking", str("UNLOCKING")), ("state_jammed", str("JAMMED")), ("state_open", str("OPEN")),
            ("optimistic", "false"), ("retain", "false"), ("qos", "1"),
        ]
        if lock.unlockCode != nil {
            lockFields.append(("code_format", str("^\\d{4,12}$")))
        }
        return [
            config("lock", node, "lock", lockFields + common),
            config("binary_sensor", node, "door", [
                ("name", str("Door")), ("unique_id", str(node + "_door")), ("device_class", str("door")),
                ("state_topic", str(t.door)), ("payload_on", str("open")), ("payload_off", str("closed")),
            ] + common),
            config("binary_sensor", node, "problem", [
                ("name", str("Jam or fault")), ("unique_id", str(node + "_problem")), ("device_class", str("problem")),
                ("entity_category", str("diagnostic")),
                ("state_topic", str(t.problem)), ("payload_on", str("ON")), ("payload_off", str("OFF")),
            ] + common),
            config("sensor", node, "last_event", [
                ("name", str("Last event")), ("unique_id", str(node + "_last_event")), ("icon", str("mdi:history")),
                ("state_topic", str(t.lastEvent)), ("value_template", str("{{ value_json.summary }}")),
                ("json_attributes_topic", str(t.lastEvent)),
            ] + common),
        ]
    }

    /// The retained discovery messages for `phone`: presence, and the arrival intent when enabled.
    public func messages(for phone: BridgedPhone) -> [MQTTMessage] {
        let node = "latchkey_phone_" + MQTTSettings.slug(phone.name)
        let t = PhoneTopics(prefix: phone.topicPrefix)
        let common = commonFields(node: node, name: phone.name, model: "Latchkey phone agent", board: nil,
                                  agentAvailability: t.availability)
        var out = [config("device_tracker", node, "presence", [
            ("name", "null"), ("unique_id", str(node + "_presence")), ("state_topic", str(t.presence)),
            ("payload_home", str("home")), ("payload_not_home", str("not_home")), ("source_type", str("bluetooth_le")),
        ] + common)]
        if phone.arrivalIntent {
            out.append(config("button", node, "arriving", [
                ("name", str("Arriving")), ("unique_id", str(node + "_arriving")), ("icon", str("mdi:home-import-outline")),
                ("command_topic", str(t.arriving)), ("payload_press", str("arriving")),
                ("command_template", str("{\"action\":\"{{ value }}\",\"ts\":{{ now().timestamp() }}}")),
                ("qos", "1"), ("retain", "false"),
            ] + common))
        }
        return out
    }

    private func commonFields(node: String, name: String, model: String, board: String?,
                              agentAvailability: String) -> [(String, String)] {
        var deviceFields = [
            ("identifiers", "[\(str(node))]"), ("name", str(name)), ("manufacturer", str("Latchkey")),
            ("model", str(model)), ("sw_version", str(softwareVersion)),
        ]
        if let board { deviceFields.append(("hw_version", str(board))) }
        let device = "{" + deviceFields.map { "\(str($0.0)):\($0.1)" }.joined(separator: ",") + "}"
        let availability = "[{\"topic\":\(str(bridgeAvailability))},{\"topic\":\(str(agentAvailability))}]"
        return [("availability", availability), ("availability_mode", str("all")),
                ("payload_available", str("online")), ("payload_not_available", str("offline")), ("device", device)]
    }

    private func config(_ component: String, _ node: String, _ object: String, _ fields: [(String, String)]) -> MQTTMessage {
        let body = "{" + fields.map { "\(str($0.0)):\($0.1)" }.joined(separator: ",") + "}"
        return MQTTMessage(topic: "\(discoveryPrefix)/\(component)/\(node)/\(object)/config", text: body, qos: 1, retain: true)
    }

    private func str(_ s: String) -> String { jsonString(s) }
}
