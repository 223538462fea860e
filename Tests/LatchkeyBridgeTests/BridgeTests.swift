import LatchkeyMQTT
import LatchkeyPosix
import LatchkeySim
import LatchkeySimMQTT
import LatchkeyTransport
import Testing
@testable import LatchkeyBridge

/// The bridge on the simulated broker and an in-process lock: every consequence runs when the
/// manual loop advances, so nothing here waits.
final class BridgeRig {
    let loop = ManualEventLoop()
    let broker: SimulatedBroker
    let agent: FakeLockLink
    var wall = 1_750_000_000.0
    var logs: [(BridgeLogLevel, String)] = []
    let directory: String
    var bridge: Bridge!
    var lockBridge: LockBridge!
    let observer: SimulatedMQTTConnection
    var seen: [MQTTMessage] = []

    init(lock: BridgedLock = BridgedLock(name: "Front Door", controlSocket: "-", topicPrefix: "latchkey/front-door",
                                         commands: [.lock], unlockCode: nil),
         users: [String: String] = [:], password: String? = nil) throws {
        broker = SimulatedBroker(loop: loop)
        broker.users = users
        agent = FakeLockLink(loop: loop)
        directory = try RuntimeDirectory.makeTemporary(prefix: "bridge-test")
        observer = broker.connection(MQTTEndpoint(host: "sim", port: 1, clientID: "observer", username: "obs", password: "obs"))
        build(lock: lock, password: password)
    }

    func build(lock: BridgedLock, password: String?) {
        let availability = "latchkey/bridge/test/availability"
        let connection = broker.connection(MQTTEndpoint(host: "sim", port: 1, clientID: "bridge", username: "door",
                                                        password: password, will: Bridge.will(availability)))
        bridge = Bridge(connection: connection, loop: loop, availabilityTopic: availability) { [unowned self] in
            self.logs.append(($0, $1))
        }
        let discovery = HomeAssistantDiscovery(discoveryPrefix: "homeassistant", bridgeAvailability: availability,
                                               softwareVersion: "0.1.0")
        lockBridge = try! LockBridge(lock: lock, link: agent, bridge: bridge, discovery: discovery,
                                     maximumCommandAge: .seconds(10), resultExpiry: 60,
                                     cursorFile: CursorFile(path: directory + "/front-door.cursor"),
                                     wallNow: { [unowned self] in self.wall })
    }

    /// A second client that records what it receives on `filter`.
    func observe(_ filter: String) {
        let sniffer = Sniffer { [unowned self] in self.seen.append($0) }
        observer.delegate = sniffer
        observer.connect()
        loop.advance(by: .zero)
        try! observer.subscribe(filter)
        sniffers.append(sniffer)
        loop.advance(by: .zero)
    }
    var sniffers: [Sniffer] = []

    func events() -> [String] { seen.filter { $0.topic == "latchkey/front-door/events" }.map(\.text) }

    func send(_ text: String, retain: Bool = false) {
        _ = try! observer.publish(MQTTMessage(topic: "latchkey/front-door/set", text: text, qos: 1, retain: retain))
        loop.advance(by: .zero)
    }

    deinit { RuntimeDirectory.remove(directory) }
}

final class Sniffer: MQTTConnectionDelegate {
    let received: (MQTTMessage) -> Void
    init(_ received: @escaping (MQTTMessage) -> Void) { self.received = received }
    func mqttDidConnect(_ connection: any MQTTConnection) {}
    func mqtt(_ connection: any MQTTConnection, didFailToConnect failure: MQTTConnectFailure) {}
    func mqtt(_ connection: any MQTTConnection, didDisconnect reason: String) {}
    func mqtt(_ connection: any MQTTConnection, didAcknowledge messageID: Int) {}
    func mqtt(_ connection: any MQTTConnection, didReceive message: MQTTMessage) { received(message) }
}

struct BridgeTests {
    @Test func publishesTheAuditLogFromTheCursorThenFollows() throws {
        let rig = try BridgeRig()
        rig.observe("latchkey/#")
        for i in 1...3 { rig.agent.log("e\(i)") }
        rig.bridge.start()
        rig.loop.advance(by: .zero)
        rig.agent.log("e4")
        rig.loop.advance(by: .zero)
        #expect(rig.events() == (1...4).map { "{\"seq\":\($0),\"summary\":\"e\($0)\"}" })
        #expect(try CursorFile(path: rig.directory + "/front-door.cursor").load() == 4)
        #expect(rig.broker.retained["latchkey/front-door/state"]?.text == "LOCKED")
        #expect(rig.broker.retained["latchkey/front-door/availability"]?.text == "online")
        #expect(rig.broker.retained["latchkey/bridge/test/availability"]?.text == "online")
        #expect(rig.broker.retained["latchkey/front-door/last_event"]?.text == "{\"seq\":4,\"summary\":\"e4\"}")
    }

    @Test func aBrokerOutageLosesAndRepeatsNothing() throws {
        let rig = try BridgeRig()
        rig.observe("latchkey/front-door/events")
        rig.bridge.start()
        rig.agent.log("before")
        rig.loop.advance(by: .zero)
        rig.broker.stop()
        rig.loop.advance(by: .zero)
        for i in 1...250 { rig.agent.log("during \(i)") }  // more than a page and the window
        rig.loop.advance(by: .seconds(3600))  // an hour down: the backoff is capped at 60 s
        #expect(!rig.bridge.isConnected)
        rig.broker.start()
        rig.observer.connect()
        rig.loop.advance(by: .zero)
        try rig.observer.subscribe("latchkey/front-door/events")
        rig.loop.advance(by: .seconds(60))
        let seqs = rig.events().map { Int($0.split(separator: ",")[0].dropFirst(7))! }
        #expect(seqs == Array(1...251))
        #expect(rig.logs.filter { $0.1.contains("unreachable") }.count == 1)  // said once, not per retry
    }

    @Test func aRestartedBridgeResumesAfterItsCursor() throws {
        let rig = try BridgeRig()
        rig.observe("latchkey/front-door/events")
        rig.bridge.start()
        rig.agent.log("one")
        rig.loop.advance(by: .zero)
        rig.bridge.stop()
        rig.loop.advance(by: .zero)
        rig.agent.log("two")
        rig.build(lock: rig.lockBridge.lock, password: nil)
        rig.bridge.start()
        rig.loop.advance(by: .zero)
        #expect(rig.events() == ["{\"seq\":1,\"summary\":\"one\"}", "{\"seq\":2,\"summary\":\"two\"}"])
    }

    @Test func aFreshEnabledCommandReachesTheLockAsTheBridgesKey() throws {
        let rig = try BridgeRig()
        rig.agent.lockState = "unlocked"
        rig.observe("latchkey/front-door/result")
        rig.bridge.start()
        rig.loop.advance(by: .zero)
        rig.send("{\"action\":\"lock\",\"ts\":\(rig.wall - 2),\"id\":\"c1\"}")
        #expect(rig.agent.commands == ["bridge lock"])
        #expect(rig.seen.last?.text.hasPrefix("{\"id\":\"c1\",\"action\":\"lock\",\"ok\":true") == true)
        #expect(rig.seen.last?.expirySeconds == 60)
        #expect(rig.broker.retained["latchkey/front-door/state"]?.text == "LOCKED")
    }

    @Test(arguments: [
        ("{\"action\":\"lock\",\"ts\":1749999980}", "stale command"),            // 20 s old, bound 10 s
        ("{\"action\":\"lock\",\"ts\":1750000030}", "stale command"),            // 30 s in the future
        ("{\"action\":\"lock\"}", "no timestamp"),
        ("LOCK", "malformed"),
        ("{\"action\":\"unlock\",\"ts\":1750000000}", "not enabled"),             // only lock is enabled
    ])
    func aCommandThatFailsAGateNeverReachesTheLock(payload: String, reason: String) throws {
        let rig = try BridgeRig()
        rig.observe("latchkey/front-door/result")
        rig.bridge.start()
        rig.loop.advance(by: .zero)
        rig.send(payload)
        #expect(rig.agent.commands.isEmpty)
        #expect(rig.seen.last?.text.contains("\"ok\":false") == true)
        #expect(rig.seen.last?.text.contains(reason) == true)
    }

    /// A retained command, waiting for the bridge or published (by an attacker) while it is
    /// subscribed — then it arrives at once, not as a retained copy — is refused and cleared.
    @Test(arguments: [false, true])
    func aRetainedCommandIsRefusedAndCleared(whileSubscribed: Bool) throws {
        let rig = try BridgeRig()
        rig.observe("latchkey/front-door/result")
        if whileSubscribed { rig.bridge.start(); rig.loop.advance(by: .zero) }
        rig.send("{\"action\":\"lock\",\"ts\":\(rig.wall)}", retain: true)
        if !whileSubscribed { rig.bridge.start(); rig.loop.advance(by: .zero) }
        #expect(rig.agent.commands.isEmpty)
        #expect(rig.broker.retained["latchkey/front-door/set"] == nil)
        #expect(rig.seen.last?.text.contains("retained") == true)
    }

    @Test func wrongCredentialsAreOneClearLineAndBackoffNotACrashLoop() throws {
        let rig = try BridgeRig(users: ["door": "right"], password: "wrong")
        rig.bridge.start()
        rig.loop.advance(by: .seconds(600))
        let errors = rig.logs.filter { $0.0 == .error }
        #expect(errors.map(\.1) == ["MQTT: broker refused the connection: Bad user name or password (reason code 134); "
                                    + "check username and password_file in mqtt.yaml"])
        #expect(rig.bridge.lastFailure?.isPermanent == true)
        // Attempts at 0, 1, 3, 7, 15, 31, 63 s, then every 60 s: 15 in 600 s.
        #expect(rig.broker.connectAttempts == 15)
        #expect(rig.broker.published.isEmpty)
    }

    @Test func anAgentThatGoesAwayIsUnavailable() throws {
        let rig = try BridgeRig()
        rig.bridge.start()
        rig.loop.advance(by: .zero)
        rig.agent.stop()
        rig.loop.advance(by: .zero)
        #expect(rig.broker.retained["latchkey/front-door/availability"]?.text == "offline")
        rig.agent.reachable = true
        rig.loop.advance(by: .seconds(2))
        #expect(rig.broker.retained["latchkey/front-door/availability"]?.text == "online")
    }

    @Test func theWillMarksADeadBridgeOffline() throws {
        let rig = try BridgeRig()
        rig.bridge.start()
        rig.loop.advance(by: .zero)
        rig.broker.drop(rig.bridge.connection as! SimulatedMQTTConnection)
        rig.loop.advance(by: .zero)
        #expect(rig.broker.retained["latchkey/bridge/test/availability"]?.text == "offline")
    }
}
