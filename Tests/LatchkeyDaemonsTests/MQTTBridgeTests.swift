#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
@testable import LatchkeyBridge
import LatchkeyControl
import LatchkeyEvents
import LatchkeyLock
import LatchkeyMQTT
import LatchkeyPosix
@testable import LatchkeyDaemons
@testable import LatchkeyDoctor
import LatchkeySecurity
import LatchkeyTransport
import Logging
import Testing

/// The bridge against Debian's `mosquitto` on 127.0.0.1: the lock daemon on the simulated
/// radio with its file-backed GPIO chip (its socket sees the bridge as another user), the
/// bridge on the same loop, and Debian's
/// `mosquitto_sub` / `mosquitto_pub` as the outside world. Every wait runs the loop until a
/// condition, bounded (a 20 ms timer re-checks what arrives through files and processes).
@Suite(.serialized, .enabled(if: MosquittoBroker.isInstalled, "needs Debian's mosquitto and mosquitto-clients"))
final class MQTTBridgeTests {
    static let bridgeKey: UInt32 = 9
    let rig: DaemonRig
    let broker: MosquittoBroker
    var bridge: Bridge?
    var subscriber: pid_t = 0
    var logs: [String] = []
    private var ticker: Scheduled?

    init() throws {
        rig = try DaemonRig()
        try StateStores.openKeys(rig.lockState).add(PhoneKey(id: Self.bridgeKey, name: "mqtt-bridge",
                                                             secret: CommandSealing.newSecret(), role: .user))
        try rig.addToLockConfig("bridge_key_id: \(Self.bridgeKey)")
        // The bridge reaches the lock as its own user, as under systemd: restricted to what it needs.
        try rig.connectAsTheBridge()
        try rig.startLock()
        broker = try MosquittoBroker(directory: rig.directory, users: ["door": "right", "watcher": "w"], logPackets: true)
        tick()
        #expect(wait { self.broker.isListening })
    }

    deinit {
        bridge?.stop()
        if subscriber > 0 { terminate(subscriber) }
        broker.stop()
        rig.close()
    }

    /// Keeps the loop waking, so conditions on files and processes are checked.
    private func tick() {
        ticker = rig.loop.schedule(after: .milliseconds(20)) { [weak self] in self?.tick() }
    }

    @discardableResult
    func wait(_ condition: () -> Bool) -> Bool { rig.wait(until: condition) }

    func settings(password: String = "right", commands: Set<BridgeAction> = [.lock, .unlock]) -> MQTTSettings {
        MQTTSettings(endpoint: MQTTEndpoint(host: "127.0.0.1", port: broker.port, clientID: "bridge-test", username: "door",
                                            password: password, keepaliveSeconds: 10),
                     stateDirectory: rig.directory + "/mqtt", discoveryPrefix: "homeassistant",
                     locks: [BridgedLock(name: "Rig Door", controlSocket: rig.lock!.controlPath, topicPrefix: "latchkey/rig-door",
                                         commands: commands, unlockCode: nil, board: "sim")],
                     phones: [], commandMaximumAge: .seconds(10), resultExpirySeconds: 60)
    }

    func startBridge(_ s: MQTTSettings) throws {
        var logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        logger.logLevel = .critical
        bridge = try BridgeDaemon.start(s, on: rig.loop, logger: logger)
        bridge?.log = { [weak self] _, line in self?.logs.append(line) }
    }

    /// What the subscriber received: (topic, retained, payload), in order.
    var received: [(topic: String, retained: Bool, payload: String)] {
        guard let text = try? readTextFile(rig.directory + "/sub.txt") else { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            let f = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard f.count == 3 else { return nil }
            return (String(f[0]), f[1] == "1", String(f[2]))
        }
    }

    func payloads(_ topic: String) -> [String] { received.filter { $0.topic == topic }.map(\.payload) }

    func sequences() -> [Int] {
        payloads("latchkey/rig-door/events").compactMap { p in
            guard let r = p.range(of: "\"seq\":") else { return nil }
            return Int(p[r.upperBound...].prefix { $0.isNumber })
        }
    }

    /// Starts the subscriber and returns once it is subscribed (it has a retained marker), so
    /// that it sees everything the bridge publishes from then on.
    func subscribe() throws {
        #expect(try broker.publish("latchkey/test/ready", "ready", retain: true) == 0)
        subscriber = try broker.subscribe(["homeassistant/#", "latchkey/#"], to: rig.directory + "/sub.txt",
                                          user: "watcher", password: "w")
        #expect(wait { self.payloads("latchkey/test/ready").contains("ready") })
    }

    private var flushes = 0

    /// Returns once the broker has read the subscriber's PUBACK for every message the
    /// subscriber has written down. mosquitto_sub sends the PUBACK before it prints, so it
    /// sits in the broker's socket before a marker published now; the broker reads every
    /// ready socket in the turn that routes the marker, and a SIGTERM ends its loop only after
    /// that turn. Without this, a broker stopped just after the subscriber printed an event
    /// keeps it as unacknowledged in the subscriber's session and sends it again after its
    /// restart: one event twice, which the bridge did not publish twice.
    func subscriberAcknowledged() throws {
        flushes += 1
        let marker = "flush \(flushes)"
        #expect(try broker.publish("latchkey/test/flush", marker) == 0)
        #expect(wait { self.payloads("latchkey/test/flush").contains(marker) })
    }

    /// The last event the broker acknowledged to the bridge, from the bridge's cursor file.
    func delivered() -> UInt64 {
        (try? CursorFile(path: rig.directory + "/mqtt/" + MQTTSettings.slug("Rig Door") + ".cursor").load()) ?? 0
    }

    func now() -> Double { Files.wallSeconds() }

    @Test func discoveryStateAndACommandRoundTripToTheActuator() throws {
        try subscribe()
        try startBridge(settings())
        #expect(wait { !self.payloads("homeassistant/lock/latchkey_rig-door/lock/config").isEmpty })
        #expect(wait { self.payloads("latchkey/rig-door/state").last == "LOCKED" })

        // Discovery, field by field.
        struct LockConfig: Decodable, Equatable {
            var unique_id: String; var state_topic: String; var command_topic: String; var command_template: String
            var payload_lock: String; var payload_unlock: String; var optimistic: Bool; var qos: Int
            var state_jammed: String; var availability_mode: String
            struct Availability: Decodable, Equatable { var topic: String }
            var availability: [Availability]
            struct Device: Decodable, Equatable {
                var identifiers: [String]; var name: String; var manufacturer: String; var model: String; var hw_version: String?
            }
            var device: Device
            var code_format: String?
        }
        let config = try JSONDecoder().decode(LockConfig.self, from: Data(
            payloads("homeassistant/lock/latchkey_rig-door/lock/config")[0].utf8))
        #expect(config == LockConfig(
            unique_id: "latchkey_rig-door_lock", state_topic: "latchkey/rig-door/state", command_topic: "latchkey/rig-door/set",
            command_template: "{\"action\":\"{{ value }}\",\"ts\":{{ now().timestamp() }},\"code\":\"{{ code }}\"}",
            payload_lock: "lock", payload_unlock: "unlock", optimistic: false, qos: 1, state_jammed: "JAMMED",
            availability_mode: "all",
            availability: [.init(topic: "latchkey/bridge/bridge-test/availability"), .init(topic: "latchkey/rig-door/availability")],
            device: .init(identifiers: ["latchkey_rig-door"], name: "Rig Door", manufacturer: "Latchkey", model: "Latchkey BLE lock",
                           hw_version: "sim"),
            code_format: nil))
        struct SensorConfig: Decodable { var device_class: String?; var state_topic: String; var payload_on: String?
            struct Device: Decodable { var identifiers: [String] }; var device: Device }
        let door = try JSONDecoder().decode(SensorConfig.self, from: Data(
            payloads("homeassistant/binary_sensor/latchkey_rig-door/door/config")[0].utf8))
        #expect(door.device_class == "door" && door.state_topic == "latchkey/rig-door/door" && door.payload_on == "open")
        #expect(door.device.identifiers == ["latchkey_rig-door"])
        let problem = try JSONDecoder().decode(SensorConfig.self, from: Data(
            payloads("homeassistant/binary_sensor/latchkey_rig-door/problem/config")[0].utf8))
        #expect(problem.device_class == "problem" && problem.payload_on == "ON")
        #expect(!payloads("homeassistant/sensor/latchkey_rig-door/last_event/config").isEmpty)
        // Every discovery message names this lock's device, whichever entity it configures.
        struct Discovery: Decodable { var unique_id: String; struct Device: Decodable { var identifiers: [String] }; var device: Device }
        let discovery = received.filter { $0.topic.hasPrefix("homeassistant/") }
        #expect(discovery.count >= 4)
        for message in discovery {
            let decoded = try JSONDecoder().decode(Discovery.self, from: Data(message.payload.utf8))
            #expect(decoded.device.identifiers == ["latchkey_rig-door"] && decoded.unique_id.hasPrefix("latchkey_rig-door_"))
        }
        #expect(payloads("latchkey/rig-door/availability").last == "online")

        // unlock from the broker: the actuator runs, the audit log names the bridge's key.
        #expect(try broker.publish("latchkey/rig-door/set", "{\"action\":\"unlock\",\"ts\":\(now()),\"id\":\"u1\"}") == 0)
        #expect(wait { self.rig.lock!.agent.controller.lockState == .unlocked })
        #expect(wait { self.payloads("latchkey/rig-door/result").contains { $0.hasPrefix("{\"id\":\"u1\",\"action\":\"unlock\",\"ok\":true") } })
        #expect(wait { self.payloads("latchkey/rig-door/events").contains {
            $0.contains("\"kind\":\"lock_operation\"") && $0.contains("\"operation\":\"unlock\"")
                && $0.contains("\"source\":\"proprietaryRemote\"") && $0.contains("\"who\":9") } })
        #expect(wait { self.payloads("latchkey/rig-door/state").last == "UNLOCKED" })
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).last?.field("source") == "bridge")
        // ... and back.
        #expect(try broker.publish("latchkey/rig-door/set", "{\"action\":\"lock\",\"ts\":\(now())}") == 0)
        #expect(wait { self.rig.lock!.agent.controller.lockState == .locked })
        #expect(wait { self.payloads("latchkey/rig-door/state").last == "LOCKED" })
    }

    @Test func staleAndRetainedCommandsNeverMoveTheLock() throws {
        try subscribe()
        try startBridge(settings())
        #expect(wait { self.payloads("latchkey/rig-door/state").last == "LOCKED" })
        #expect(try broker.publish("latchkey/rig-door/set", "{\"action\":\"unlock\",\"ts\":\(now() - 60),\"id\":\"old\"}") == 0)
        #expect(wait { self.payloads("latchkey/rig-door/result").contains { $0.contains("\"id\":\"old\"") && $0.contains("stale command") } })
        #expect(try broker.publish("latchkey/rig-door/set", "{\"action\":\"unlock\",\"ts\":\(now())}", retain: true) == 0)
        #expect(wait { self.payloads("latchkey/rig-door/result").contains { $0.contains("retained") } })
        // Cleared: the retained command is gone from the broker (an empty retained message).
        #expect(wait { self.received.contains { $0.topic == "latchkey/rig-door/set" && $0.payload.isEmpty } })
        #expect(rig.lock!.agent.controller.lockState == .locked)
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).isEmpty)
    }

    @Test func aBrokerOutageDeliversEveryEventOnceInOrder() throws {
        try subscribe()
        try startBridge(settings())
        #expect(wait { !self.sequences().isEmpty || self.payloads("latchkey/rig-door/state").last == "LOCKED" })
        let before = rig.lock!.agent.statusFrame.lastEventSequence
        #expect(wait { self.sequences().last.map(UInt32.init) == before || before == 0 })
        // Before the stop the broker has acknowledged every event to the bridge, and the
        // subscriber every one to the broker: neither is owed again after the restart, so a
        // second copy could only be the bridge publishing an event twice.
        #expect(wait { self.delivered() == UInt64(before) })
        try subscriberAcknowledged()
        broker.stop()
        #expect(wait { !(self.bridge?.isConnected ?? true) })
        // Events while the broker is down: unlocks and locks through the control socket.
        for i in 0..<4 {
            _ = try rig.send("bridge \(i % 2 == 0 ? "unlock" : "lock")", to: rig.lock)
            #expect(wait { !self.rig.lock!.agent.controller.machine.isMoving })
        }
        let last = rig.lock!.agent.statusFrame.lastEventSequence
        #expect(last > before)
        try broker.start()
        #expect(wait { self.bridge?.isConnected ?? false })
        #expect(wait { self.sequences().last.map(UInt32.init) == last })
        #expect(sequences() == Array(1...Int(last)))
    }

    /// Events the bridge had sent when the link dropped, never acknowledged (the broker
    /// frozen, then killed with them unread in its socket), reach the restarted broker once:
    /// the bridge publishes them again from its cursor, and the MQTT library must not resend
    /// its own copies of them as well. The broker's log is the record of what it received.
    @Test func eventsInFlightWhenTheLinkDropsReachTheBrokerOnceAfterReconnecting() throws {
        try startBridge(settings())
        #expect(wait { self.bridge?.isConnected ?? false })
        let before = rig.lock!.agent.statusFrame.lastEventSequence
        #expect(wait { self.delivered() == UInt64(before) })
        broker.freeze()
        for i in 0..<4 {
            _ = try rig.send("bridge \(i % 2 == 0 ? "unlock" : "lock")", to: rig.lock)
            #expect(wait { !self.rig.lock!.agent.controller.machine.isMoving })
        }
        let last = rig.lock!.agent.statusFrame.lastEventSequence
        #expect(last > before)
        // Every new event is written to the frozen broker's socket, awaiting its PUBACK.
        #expect(wait { self.bridge?.acknowledgements.count == Int(last - before) })
        broker.crash()
        #expect(wait { !(self.bridge?.isConnected ?? true) })
        try broker.start()
        #expect(wait { self.bridge?.isConnected ?? false })
        #expect(wait { self.delivered() == UInt64(last) })
        let received = broker.publicationsReceived(from: "bridge-test", topic: "latchkey/rig-door/events")
        #expect(received.count == Int(last), "\(received)")
        #expect(!received.contains { $0.contains("(d1,") }, "a copy resent by the MQTT library")
    }

    /// `latchkey doctor --mqtt`: the broker refusing mqtt.yaml's password is a FIX line naming
    /// the fields to check; with the right one, the broker and the lock's socket are ok.
    @Test func doctorSaysWhatToFixWhenTheBrokerRefusesTheBridge() throws {
        #expect(wait { self.rig.lock!.agent.controller.lockState == .locked })
        let wrong = BridgeDoctor.run(settings(password: "wrong"), on: rig.loop)
        #expect(wrong.first == .fix("broker mqtt://127.0.0.1:\(broker.port): broker refused the connection: Not authorized "
                                    + "(reason code 135); check username and password_file in mqtt.yaml"))
        #expect(wrong.dropFirst().map(\.verdict) == [.ok])
        let right = BridgeDoctor.run(settings(), on: rig.loop)
        #expect(right.map(\.verdict) == [.ok, .ok, .ok])
        #expect(right.first?.message == "broker mqtt://127.0.0.1:\(broker.port) accepts the bridge (user door)")
        #expect(right[1].message == "an anonymous client is refused by the broker")
        #expect(right.last?.message.hasPrefix("lock Rig Door: \(rig.lock!.controlPath) answers (lock=locked door=closed)") == true)
        #expect(Doctor.blocks(wrong) && !Doctor.blocks(right))
    }

    /// Mosquitto 2.0 answers a wrong password with reason 135 (Not authorized), not 134.
    @Test func wrongCredentialsAreOneClearLine() throws {
        try startBridge(settings(password: "wrong"))
        #expect(wait { self.logs.contains { $0.hasPrefix("MQTT:") } })
        // Three refused attempts (at 0, 1 and 3 s, the broker's log says): still one line.
        #expect(wait { ((try? readTextFile(self.broker.directory + "/broker.log")) ?? "")
            .split(separator: "\n").filter { $0.hasSuffix("not authorised.") }.count >= 3 })
        #expect(logs.filter { $0.hasPrefix("MQTT:") } == ["MQTT: broker refused the connection: Not authorized (reason code 135); "
                         + "check username and password_file in mqtt.yaml"])
        #expect(bridge?.lastFailure?.isPermanent == true)
    }
}
