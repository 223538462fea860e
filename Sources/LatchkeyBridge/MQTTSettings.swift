import LatchkeyConfig
import LatchkeyMQTT

/// What the bridge may do with commands from the broker, per lock (docs/CONFIGURATION.md).
public enum BridgeAction: String, Sendable, CaseIterable {
    case lock, unlock
}

/// One lock the bridge serves.
public struct BridgedLock: Equatable, Sendable {
    /// The lock's name, shown in Home Assistant; its slug names the topics by default.
    public var name: String
    public var controlSocket: String
    /// `latchkey/<slug of name>` unless given.
    public var topicPrefix: String
    /// Off by default: only the actions named here are carried out.
    public var commands: Set<BridgeAction>
    /// A code Home Assistant must send with `unlock` (its `code_format`), read from a file.
    public var unlockCode: String?
    /// The lock's board (`pi4b`, ...), shown as the device's hardware version in Home Assistant.
    public var board: String?
    /// Messages on `<prefix>/set` taken in any 60 s (`CommandFlood`); the rest are refused.
    public var commandsPerMinute: Int

    public static let defaultCommandsPerMinute = 10

    public init(name: String, controlSocket: String, topicPrefix: String, commands: Set<BridgeAction>,
                unlockCode: String?, board: String? = nil, commandsPerMinute: Int = BridgedLock.defaultCommandsPerMinute) {
        self.name = name; self.controlSocket = controlSocket; self.topicPrefix = topicPrefix
        self.commands = commands; self.unlockCode = unlockCode; self.board = board
        self.commandsPerMinute = commandsPerMinute
    }
}

/// One phone agent the bridge serves: presence as a device tracker, arrival intents.
public struct BridgedPhone: Equatable, Sendable {
    public var name: String
    public var controlSocket: String
    public var topicPrefix: String
    /// Whether an `arriving` message on `<prefix>/arriving/set` reaches the phone agent.
    public var arrivalIntent: Bool

    public init(name: String, controlSocket: String, topicPrefix: String, arrivalIntent: Bool) {
        self.name = name; self.controlSocket = controlSocket; self.topicPrefix = topicPrefix; self.arrivalIntent = arrivalIntent
    }
}

/// Everything `latchkey mqtt` reads from `mqtt.yaml`.
public struct MQTTSettings: Equatable, Sendable {
    public var endpoint: MQTTEndpoint
    public var stateDirectory: String
    public var discoveryPrefix: String
    public var locks: [BridgedLock]
    public var phones: [BridgedPhone]
    /// A command whose payload timestamp is further than this from the bridge's clock is
    /// refused (and one without a timestamp): the bound must exceed the clocks' disagreement.
    public var commandMaximumAge: Duration
    /// The MQTT 5 expiry the bridge's own command results carry.
    public var resultExpirySeconds: UInt32

    public static let defaultStateDirectory = "/var/lib/latchkey/mqtt"

    public init(endpoint: MQTTEndpoint, stateDirectory: String, discoveryPrefix: String, locks: [BridgedLock],
                phones: [BridgedPhone], commandMaximumAge: Duration, resultExpirySeconds: UInt32) {
        self.endpoint = endpoint; self.stateDirectory = stateDirectory; self.discoveryPrefix = discoveryPrefix
        self.locks = locks; self.phones = phones; self.commandMaximumAge = commandMaximumAge
        self.resultExpirySeconds = resultExpirySeconds
    }

    /// `read` reads the password and code files (their errors name the field that named them).
    public static func load(_ file: ConfigFile, read: (String) throws -> String) throws(ConfigError) -> MQTTSettings {
        let root = file.root
        let brokerText = try root.required("broker")
        guard let broker = BrokerURL(brokerText) else {
            throw root.invalid("broker", "expected mqtt://HOST[:PORT] or mqtts://HOST[:PORT], found '\(brokerText)'")
        }
        var security = MQTTEndpoint.Security.plain
        let caFile = try root.string("ca_file")
        let certificate = try root.string("client_certificate")
        let key = try root.string("client_key")
        if broker.tls {
            guard let caFile else { throw root.invalid("ca_file", "is required with mqtts://") }
            if (certificate == nil) != (key == nil) {
                throw root.invalid(certificate == nil ? "client_certificate" : "client_key",
                                   "client_certificate and client_key go together")
            }
            security = .tls(caFile: caFile, clientCertificate: certificate.map { ($0, key!) })
        } else if caFile != nil || certificate != nil || key != nil {
            throw root.invalid(caFile != nil ? "ca_file" : certificate != nil ? "client_certificate" : "client_key",
                               "only with an mqtts:// broker")
        }
        let username = try root.string("username")
        let passwordFile = try root.string("password_file")
        var password: String?
        if let passwordFile {
            guard username != nil else { throw root.invalid("password_file", "needs a username") }
            password = try secret(passwordFile, field: "password_file", in: root, read: read)
        }
        let clientID = try root.string("client_id", default: "latchkey-bridge")
        guard !clientID.isEmpty, clientID.utf8.count <= 64 else { throw root.invalid("client_id", "must be 1 to 64 bytes") }
        let keepalive = try root.integer("keepalive_seconds", in: 5...3600) ?? 30
        let state = try root.string("state_directory", default: defaultStateDirectory)
        let discovery = try root.string("discovery_prefix", default: "homeassistant")
        try checkTopic(discovery, "discovery_prefix", root)
        let maxAge = try root.seconds("command_max_age_seconds", in: 1...300) ?? .seconds(10)
        let resultExpiry = try root.integer("result_expiry_seconds", in: 1...86_400) ?? 60
        let protected = broker.tls || broker.isThisHost
        let clearText = "needs a protected broker: mqtts:// (with ca_file), or mqtt:// to this host (localhost, "
            + "127.0.0.1, ::1); over mqtt:// to '\(broker.host)' anyone on the network reads the code and sends commands "
            + "(docs/SECURITY.md, \"The network door\")"

        var locks: [BridgedLock] = []
        for t in try root.tables("locks") ?? [] {
            let name = try t.required("name")
            let prefix = try t.string("topic_prefix", default: "latchkey/" + slug(name))
            try checkTopic(prefix, "topic_prefix", t)
            let socket = try t.string("control_socket", default: "/var/lib/latchkey/lock/control.sock")
            if try t.string("key_id") != nil {
                // The lock, not the bridge, names the bridge's key (docs/SECURITY.md, "Control sockets").
                throw t.invalid("key_id", "the lock names the bridge's key now: move it to lock.yaml as bridge_key_id")
            }
            var actions = Set<BridgeAction>()
            for word in try t.strings("commands") ?? [] {
                guard let a = BridgeAction(rawValue: word) else {
                    throw t.invalid("commands", "'\(word)' is not one of: lock, unlock")
                }
                actions.insert(a)
            }
            let codeFile = try t.string("unlock_code_file")
            let code = try codeFile.map { (f) throws(ConfigError) in try secret(f, field: "unlock_code_file", in: t, read: read) }
            if code != nil && !actions.contains(.unlock) { throw t.invalid("unlock_code_file", "only with `unlock` in commands") }
            if actions.contains(.unlock) && !protected { throw t.invalid("commands", "`unlock` " + clearText) }
            let board = try t.string("board")
            let rate = try t.integer("commands_per_minute", in: 1...600) ?? BridgedLock.defaultCommandsPerMinute
            try t.finish()
            locks.append(BridgedLock(name: name, controlSocket: socket, topicPrefix: prefix, commands: actions, unlockCode: code,
                                     board: board, commandsPerMinute: rate))
        }
        var phones: [BridgedPhone] = []
        for t in try root.tables("phones") ?? [] {
            let name = try t.required("name")
            let prefix = try t.string("topic_prefix", default: "latchkey/phone/" + slug(name))
            try checkTopic(prefix, "topic_prefix", t)
            let socket = try t.string("control_socket", default: "/var/lib/latchkey/phone/control.sock")
            let arrival = try t.bool("arrival_intent") ?? false
            if arrival && !protected { throw t.invalid("arrival_intent", "an arrival intent " + clearText) }
            try t.finish()
            phones.append(BridgedPhone(name: name, controlSocket: socket, topicPrefix: prefix, arrivalIntent: arrival))
        }
        if locks.isEmpty && phones.isEmpty { throw root.invalid("locks", "name at least one lock (or phone) to serve") }
        let all = locks.map(\.topicPrefix) + phones.map(\.topicPrefix)
        if let clash = all.first(where: { p in all.filter { $0 == p }.count > 1 }) {
            throw root.invalid("locks", "two agents share the topic prefix '\(clash)'")
        }
        try root.finish()
        let endpoint = MQTTEndpoint(host: broker.host, port: broker.port, security: security, clientID: clientID,
                                    username: username, password: password, keepaliveSeconds: keepalive)
        return MQTTSettings(endpoint: endpoint, stateDirectory: state, discoveryPrefix: discovery, locks: locks,
                            phones: phones, commandMaximumAge: maxAge, resultExpirySeconds: UInt32(resultExpiry))
    }

    /// The first line of a secret file, which must not be empty.
    private static func secret(_ path: String, field: String, in table: ConfigTable,
                               read: (String) throws -> String) throws(ConfigError) -> String {
        let text: String
        do { text = try read(path) } catch { throw table.invalid(field, "cannot read \(path): \(error)") }
        let line = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
        guard !line.isEmpty else { throw table.invalid(field, "\(path) is empty") }
        return line
    }

    private static func checkTopic(_ topic: String, _ field: String, _ table: ConfigTable) throws(ConfigError) {
        guard !topic.isEmpty, !topic.hasPrefix("/"), !topic.hasSuffix("/"),
              !topic.contains(where: { $0 == "+" || $0 == "#" || $0 == " " }) else {
            throw table.invalid(field, "'\(topic)' is not a topic prefix (no + # or spaces, no leading or trailing /)")
        }
    }

    /// "Front Door" → "front-door": lowercase letters, digits and dashes.
    public static func slug(_ name: String) -> String {
        var out = ""
        for c in name.lowercased().unicodeScalars {
            if ("a"..."z").contains(c) || ("0"..."9").contains(c) { out.unicodeScalars.append(c) }
            else if !out.isEmpty && !out.hasSuffix("-") { out += "-" }
        }
        while out.hasSuffix("-") { out.removeLast() }
        return out.isEmpty ? "lock" : out
    }
}

/// `mqtt://host[:port]` (1883) or `mqtts://host[:port]` (8883).
struct BrokerURL {
    var tls: Bool
    var host: String
    var port: Int

    init?(_ text: String) {
        let rest: Substring
        if text.hasPrefix("mqtt://") { tls = false; rest = text.dropFirst(7) }
        else if text.hasPrefix("mqtts://") { tls = true; rest = text.dropFirst(8) }
        else { return nil }
        let hostPort = rest.hasSuffix("/") ? rest.dropLast() : rest
        if let colon = hostPort.lastIndex(of: ":"), !hostPort.hasPrefix("[") || hostPort[..<colon].hasSuffix("]") {
            guard let p = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            host = String(hostPort[..<colon]); port = p
        } else {
            host = String(hostPort); port = tls ? 8883 : 1883
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains("/"), !host.contains("@") else { return nil }
    }

    /// A broker on this host, reached over loopback: nothing crosses a network. Only
    /// literal loopback names: any other name may resolve elsewhere.
    var isThisHost: Bool {
        let h = host.lowercased()
        if h == "localhost" || h == "::1" || h == "0:0:0:0:0:0:0:1" { return true }
        let octets = h.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
