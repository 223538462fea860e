import LatchkeyConfig
import LatchkeyMQTT
import Testing
@testable import LatchkeyBridge

struct MQTTSettingsTests {
    func load(_ yaml: String, files: [String: String] = [:]) throws(ConfigError) -> MQTTSettings {
        try MQTTSettings.load(try ConfigFile(path: "mqtt.yaml", text: yaml)) { path in
            guard let text = files[path] else { throw ConfigError(file: path, line: nil, field: nil, message: "no such file") }
            return text
        }
    }

    @Test func readsAFullConfiguration() throws {
        let s = try load("""
            broker: mqtts://broker.lan:8884
            ca_file: /etc/latchkey/ca.pem
            client_certificate: /etc/latchkey/bridge.pem
            client_key: /etc/latchkey/bridge.key
            username: door
            password_file: /etc/latchkey/mqtt.password
            client_id: hall-bridge
            keepalive_seconds: 20
            command_max_age_seconds: 5
            locks:
              - name: Front Door
                control_socket: /run/front.sock
                commands: [lock, unlock]
                unlock_code_file: /etc/latchkey/code
                board: pi4b
            phones:
              - name: Alice
                arrival_intent: true
            """, files: ["/etc/latchkey/mqtt.password": "s3cret\n", "/etc/latchkey/code": "1234\n"])
        #expect(s.endpoint.host == "broker.lan")
        #expect(s.endpoint.port == 8884)
        #expect(s.endpoint.security == .tls(caFile: "/etc/latchkey/ca.pem",
                                            clientCertificate: ("/etc/latchkey/bridge.pem", "/etc/latchkey/bridge.key")))
        #expect(s.endpoint.username == "door")
        #expect(s.endpoint.password == "s3cret")
        #expect(s.endpoint.clientID == "hall-bridge")
        #expect(s.endpoint.keepaliveSeconds == 20)
        #expect(s.commandMaximumAge == .seconds(5))
        #expect(s.locks == [BridgedLock(name: "Front Door", controlSocket: "/run/front.sock", topicPrefix: "latchkey/front-door",
                                        commands: [.lock, .unlock], unlockCode: "1234", board: "pi4b")])
        #expect(s.phones == [BridgedPhone(name: "Alice", controlSocket: "/var/lib/latchkey/phone/control.sock",
                                          topicPrefix: "latchkey/phone/alice", arrivalIntent: true)])
    }

    @Test func commandsAreOffByDefault() throws {
        let s = try load("broker: mqtt://127.0.0.1\nlocks:\n  - name: Back\n")
        #expect(s.endpoint.port == 1883)
        #expect(s.locks[0].commands.isEmpty)
    }

    @Test(arguments: [
        ("broker: http://x\nlocks: [{name: a}]\n", "mqtt.yaml:1: field 'broker': expected mqtt://HOST[:PORT] or mqtts://HOST[:PORT], found 'http://x'"),
        ("broker: mqtts://x\nlocks: [{name: a}]\n", "mqtt.yaml:1: field 'ca_file': is required with mqtts://"),
        ("broker: mqtt://x\nlocks:\n  - name: a\n    commands: [lock, open]\n",
         "mqtt.yaml:4: field 'locks[0].commands': 'open' is not one of: lock, unlock"),
        // The lock names the bridge's key (bridge_key_id in lock.yaml), never the bridge.
        ("broker: mqtt://x\nlocks:\n  - name: a\n    commands: [unlock]\n    key_id: 2\n",
         "mqtt.yaml:5: field 'locks[0].key_id': the lock names the bridge's key now: move it to lock.yaml as bridge_key_id"),
        ("broker: mqtt://x\nusername: u\npassword_file: /nope\nlocks: [{name: a}]\n",
         "mqtt.yaml:3: field 'password_file': cannot read /nope: /nope: no such file"),
        ("broker: mqtt://x\nlocks: [{name: a}]\nkeepalive: 3\n", "mqtt.yaml:3: field 'keepalive': unknown field"),
        ("broker: mqtt://x\n", "mqtt.yaml:1: field 'locks': name at least one lock (or phone) to serve"),
        ("broker: mqtt://x\nlocks:\n  - name: a\n    topic_prefix: a/#\n",
         "mqtt.yaml:4: field 'locks[0].topic_prefix': 'a/#' is not a topic prefix (no + # or spaces, no leading or trailing /)"),
    ])
    func refusesWithFileLineAndField(yaml: String, expected: String) {
        #expect(throws: (any Error).self) { try load(yaml) }
        do { _ = try load(yaml) } catch { #expect(error.description == expected) }
    }
}

/// Commands and intents from the network need a protected broker (docs/SECURITY.md, "The
/// network door"): over mqtt:// to another host the code and every command cross the LAN in
/// clear, and anyone on it can publish.
struct ProtectedBrokerSettingsTests {
    func load(_ yaml: String) throws(ConfigError) -> MQTTSettings {
        try MQTTSettings.load(try ConfigFile(path: "mqtt.yaml", text: yaml)) { _ in "x\n" }
    }

    @Test(arguments: [
        ("broker: mqtt://homeassistant.lan\nlocks:\n  - name: a\n    commands: [lock, unlock]\n",
         "mqtt.yaml:4: field 'locks[0].commands': `unlock` needs a protected broker"),
        ("broker: mqtt://192.168.1.2:1883\nphones:\n  - name: a\n    arrival_intent: true\n",
         "mqtt.yaml:4: field 'phones[0].arrival_intent': an arrival intent needs a protected broker"),
        ("broker: mqtt://127.0.0.1.example.com\nlocks:\n  - name: a\n    commands: [unlock]\n",
         "mqtt.yaml:4: field 'locks[0].commands': `unlock` needs a protected broker"),
    ])
    func unlockAndIntentsOverClearTextToAnotherHostAreRefused(yaml: String, expected: String) {
        do {
            _ = try load(yaml)
            Issue.record("accepted: \(yaml)")
        } catch {
            #expect(error.description.hasPrefix(expected), "\(error.description)")
        }
    }

    @Test(arguments: ["mqtt://127.0.0.1", "mqtt://localhost:1884", "mqtt://[::1]:1883", "mqtt://127.0.0.53"])
    func aBrokerOnThisHostMayCarryThem(broker: String) throws {
        let s = try load("broker: \(broker)\nlocks:\n  - name: a\n    commands: [lock, unlock]\nphones:\n  - name: b\n    arrival_intent: true\n")
        #expect(s.locks[0].commands == [.lock, .unlock] && s.phones[0].arrivalIntent)
    }

    @Test func lockOnlyCommandsAndWatchingStayAllowedOverClearText() throws {
        let s = try load("broker: mqtt://homeassistant.lan\nlocks:\n  - name: a\n    commands: [lock]\n    commands_per_minute: 4\n")
        #expect(s.locks[0].commands == [.lock] && s.locks[0].commandsPerMinute == 4)
    }
}
