#if canImport(Glibc)
import Glibc
#endif
import LatchkeyBridge
import LatchkeyControl
import LatchkeyMQTT
import LatchkeyPosix
@testable import LatchkeyDaemons
import LatchkeyTransport
import Logging
import Testing

/// The lock daemon (and with `phone`, the phone daemon linked to it) and Debian's mosquitto
/// (running or not yet), and the bridge once a test starts it with a lock that takes no
/// commands, all on the rig's loop; the bridge's log lines are kept. The daemons see the bridge
/// as another user (restricted to what the bridge needs), as under systemd. A 20 ms timer keeps
/// the loop waking, so conditions on processes are checked.
final class BrokerRig {
    let rig: DaemonRig
    let broker: MosquittoBroker
    var bridge: Bridge?
    var logs: [String] = []
    private var ticker: Scheduled?

    init(tls: Bool = false, running: Bool = true, phone: Bool = false) throws {
        rig = try DaemonRig()
        try rig.addBridgeKey()  // the bridge reads the lock's state and log as its key
        try rig.connectAsTheBridge()
        if phone { try rig.startLinked() } else { try rig.startLock() }
        broker = try MosquittoBroker(directory: rig.directory, tls: tls, running: running)
        tick()
        if running { #expect(rig.wait { self.broker.isListening }) }
    }

    deinit {
        bridge?.stop()
        broker.stop()
        rig.close()
    }

    private func tick() { ticker = rig.loop.schedule(after: .milliseconds(20)) { [weak self] in self?.tick() } }

    func settings(port: Int, security: MQTTEndpoint.Security = .plain, clientID: String) -> MQTTSettings {
        MQTTSettings(endpoint: MQTTEndpoint(host: "127.0.0.1", port: port, security: security, clientID: clientID),
                     stateDirectory: rig.directory + "/mqtt", discoveryPrefix: "homeassistant",
                     locks: [BridgedLock(name: "Rig Door", controlSocket: rig.lock!.controlPath,
                                         topicPrefix: "latchkey/rig-door", commands: [], unlockCode: nil)],
                     phones: [], commandMaximumAge: .seconds(10), resultExpirySeconds: 60)
    }

    func start(_ settings: MQTTSettings) throws {
        bridge = try BridgeDaemon.start(settings, on: rig.loop, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        bridge?.log = { [weak self] _, line in self?.logs.append(line) }
    }

    var mqttLines: [String] { logs.filter { $0.hasPrefix("MQTT:") } }

    /// The retained message on `topic`, read back with mosquitto_sub on the plain listener;
    /// nil when there is none within 10 s.
    func retained(_ topic: String) throws -> String? {
        let file = rig.directory + "/retained-\(MQTTSettings.slug(topic)).txt"
        let sub = try spawn("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-t", topic,
                                                     "-C", "1", "-W", "10"], output: file)
        var text = ""
        let got = rig.wait {
            text = (try? readTextFile(file)) ?? ""
            return text.hasSuffix("\n")
        }
        var status: Int32 = 0
        waitpid(sub, &status, 0)
        return got ? String(text.dropLast()) : nil
    }
}

/// A broker that is down when the bridge starts: one log line, attempts spaced by the capped
/// backoff (never a crash loop: the process stays up), and the session once the broker
/// comes; `doctor --mqtt` says what to fix meanwhile.
@Suite(.serialized, .enabled(if: MosquittoBroker.isInstalled, "needs Debian's mosquitto and mosquitto-clients"))
final class MQTTUnreachableBrokerTests {
    let world: BrokerRig
    init() throws { world = try BrokerRig(running: false) }

    @Test func anUnreachableBrokerIsOneLineAndBackoffUntilItComes() throws {
        let rig = world.rig
        let settings = world.settings(port: world.broker.port, clientID: "bridge-down")
        let doctor = BridgeDoctor.run(settings, on: rig.loop)
        #expect(doctor.first == .fix("broker mqtt://127.0.0.1:\(world.broker.port): broker unreachable: Connection refused; "
                                     + "check broker (and ca_file for mqtts://) in mqtt.yaml"))
        try world.start(settings)
        // Attempts at 0, 1 and 3 s (backoff 1, 2, 4 ... 60 s): three refusals, one line.
        let started = rig.loop.now
        #expect(rig.wait { (self.world.bridge?.failedAttempts ?? 0) >= 3 })
        #expect(rig.loop.now - started >= .seconds(3))
        #expect(world.mqttLines == ["MQTT: broker unreachable: Connection refused; check broker "
                                    + "(and ca_file for mqtts://) in mqtt.yaml; retrying with backoff"])
        try world.broker.start()
        // The next attempt, at 7 s, finds it.
        #expect(rig.wait { self.world.bridge?.isConnected ?? false })
        #expect(world.mqttLines.last == "MQTT: connected again")
    }
}

/// The bridge over TLS (`mqtts://`) to mosquitto with a certificate from a CA made for the
/// test; a bridge trusting another CA is refused with one clear line.
@Suite(.serialized, .enabled(if: MosquittoBroker.isInstalled && access("/usr/bin/openssl", X_OK) == 0,
                             "needs Debian's mosquitto, mosquitto-clients and openssl"))
final class MQTTBridgeTLSTests {
    let world: BrokerRig
    init() throws { world = try BrokerRig(tls: true) }

    func start(ca: String) throws {
        try world.start(world.settings(port: world.broker.tlsPort!,
                                       security: .tls(caFile: world.rig.directory + "/" + ca, clientCertificate: nil),
                                       clientID: "bridge-tls"))
    }

    @Test func publishesOverTLS() throws {
        let rig = world.rig
        try start(ca: "ca.pem")
        #expect(rig.wait { self.world.bridge?.isConnected ?? false })
        // What the bridge published over TLS, read back as a retained message on the plain listener.
        #expect(rig.wait { rig.lock!.agent.controller.lockState == .locked })
        #expect(try world.retained("latchkey/rig-door/state") == "LOCKED")
        #expect(world.logs.allSatisfy { !$0.hasPrefix("MQTT: broker") })
    }

    @Test func anUntrustedCertificateIsOneClearLine() throws {
        try start(ca: "other-ca.pem")
        #expect(world.rig.wait { !self.world.mqttLines.isEmpty })
        #expect(world.mqttLines.count == 1)
        #expect(world.mqttLines.first?.hasPrefix("MQTT: broker unreachable: ") == true)
        #expect(!(world.bridge?.isConnected ?? true))
    }
}
