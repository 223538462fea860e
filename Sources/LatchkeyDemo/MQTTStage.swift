#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyPosix
import LatchkeyTransport

/// What `latchkey demo --mqtt` adds to the demo's stage: Debian's broker on a free port of
/// 127.0.0.1 (persistence in the scratch directory, so a subscriber's queued messages survive
/// its restart), an observer (`mosquitto_sub`, a persistent session at QoS 1: what Home
/// Assistant would receive), the bridge (`latchkey mqtt`), and commands (`mosquitto_pub`).
final class MQTTStage {
    static let bridgeKey = 2
    static let prefix = "latchkey/demo-door"
    /// The retained discovery configurations of the lock's four entities.
    static let discoveryTopics = ["lock/latchkey_demo-door/lock", "binary_sensor/latchkey_demo-door/door",
                                  "binary_sensor/latchkey_demo-door/problem", "sensor/latchkey_demo-door/last_event"]
        .map { "homeassistant/\($0)/config" }

    let world: AgentStage
    let programs: MQTTDemo.Programs
    let port: Int
    private var broker: ChildProcess?
    private var brokerListening = false
    private var observer: ChildProcess?
    private var bridge: ChildProcess?
    /// What the observer received, in order.
    package private(set) var received: [(topic: String, retained: Bool, payload: String)] = []

    var brokerConfig: String { world.directory + "/mosquitto.conf" }
    var bridgeConfig: String { world.directory + "/mqtt.yaml" }
    var brokerRunning: Bool { broker?.isRunning ?? false }

    init(verbose: Bool, programs: MQTTDemo.Programs) throws(RuntimeError) {
        self.programs = programs
        world = try AgentStage(verbose: verbose)
        do { port = try LoopbackPort.free() } catch { throw RuntimeError("no free port on 127.0.0.1: \(error)") }
        // The lock names the key the bridge acts as; the bridge reaches its socket as the same user.
        let lock: String
        do { lock = try readTextFile(world.lockConfig) } catch { throw RuntimeError("\(world.lockConfig): \(error)") }
        try writeFile(world.lockConfig, lock + "\nbridge_key_id: \(Self.bridgeKey)\n")
        // As root the broker would switch to user mosquitto, which cannot write the scratch directory.
        try writeFile(brokerConfig, """
            listener \(port) 127.0.0.1
            allow_anonymous true
            persistence true
            persistence_location \(world.directory)/
            \(getuid() == 0 ? "user root" : "")
            """)
        try writeFile(bridgeConfig, """
            broker: mqtt://127.0.0.1:\(port)
            client_id: latchkey-demo
            state_directory: \(world.directory)/mqtt
            locks:
              - name: Demo Door
                control_socket: \(world.lockState)/control.sock
                board: sim
                commands: [lock, unlock]
            """)
    }

    func topic(_ leaf: String) -> String { Self.prefix + "/" + leaf }

    // MARK: Processes

    /// Starts mosquitto and waits until it says it runs; false when it did not.
    func startBroker() throws(RuntimeError) -> Bool {
        brokerListening = false
        let p = try ChildProcess(name: "mosquitto", executable: programs.broker, arguments: ["-c", brokerConfig], loop: world.loop)
        p.onLine = { [weak self] line in
            if line.contains(" running") { self?.brokerListening = true }
            if self?.world.verbose == true { print("  broker| \(line)") }
        }
        broker = p
        return world.wait(.seconds(10)) { self.brokerListening || !p.isRunning } && p.isRunning
    }

    /// SIGTERM: the broker saves the observer's queue and stops.
    func stopBroker() { broker?.stop(loop: world.loop) }

    /// The observer, subscribed before the bridge publishes: probes are published until one
    /// comes back through it (its own output is flushed per message, its debug lines are not).
    func startObserver() throws(RuntimeError) -> Bool {
        let p = try ChildProcess(name: "mosquitto_sub", executable: programs.subscriber, arguments: [
            "-h", "127.0.0.1", "-p", "\(port)", "-V", "311", "-c", "-i", "demo-observer", "-q", "1",
            "-F", "%t\t%r\t%p", "-t", "homeassistant/#", "-t", "latchkey/#",
        ], loop: world.loop)
        p.onLine = { [weak self] line in
            guard let self else { return }
            let f = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard f.count == 3 else { return }
            received.append((String(f[0]), f[1] == "1", String(f[2])))
            if world.verbose { print("  mqtt  | \(line)") }
        }
        observer = p
        let probe = topic("probe")
        for _ in 0..<20 where p.isRunning {
            _ = try world.runTool(["-h", "127.0.0.1", "-p", "\(port)", "-t", probe, "-m", "probe"], program: programs.publisher)
            if world.wait(.milliseconds(500), until: { !self.payloads(probe).isEmpty }) { return true }
        }
        return false
    }

    /// Waits until the observer has the lock's last event and a marker published after it: by
    /// then the broker has read the observer's acknowledgements. A broker stopped before it reads
    /// the last one sends that event again to the persistent session when it returns.
    func settleObserver() throws(RuntimeError) -> Bool {
        let last = try lastEventSequence()
        guard world.wait(.seconds(10), until: { (self.sequences().last ?? 0) >= last }) else { return false }
        let flush = topic("flush"), marker = "flush-\(last)"
        _ = try world.runTool(["-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", flush, "-m", marker], program: programs.publisher)
        return world.wait(.seconds(10), until: { self.payloads(flush).contains(marker) })
    }

    func startBridge() throws(RuntimeError) {
        let p = try ChildProcess(name: "bridge", executable: world.executable,
                                 arguments: ["mqtt", "--config", bridgeConfig, "--log-level", world.verbose ? "info" : "warning"],
                                 loop: world.loop)
        p.onLine = { [weak self] line in
            // The bridge's warnings (a lost broker) go to standard error, like the agents' diagnostics.
            if self?.world.verbose == true { print("  bridge| \(line)") } else { writeLine("  bridge| \(line)", to: STDERR_FILENO) }
        }
        bridge = p
    }

    func shutdown() {
        for p in [bridge, observer, broker].compactMap({ $0 }) { p.stop(loop: world.loop) }
        world.shutdown()
    }

    // MARK: Home Assistant's side

    /// Publishes a command as Home Assistant's `command_template` does, stamped `age` seconds ago.
    func command(_ action: String, id: String, age: Double = 0, retained: Bool = false) throws(RuntimeError) -> Bool {
        let payload = "{\"action\":\"\(action)\",\"ts\":\(format3(HookAlertSink.now() - age)),\"id\":\"\(id)\"}"
        let sent = try world.runTool(["-h", "127.0.0.1", "-p", "\(port)", "-V", "5", "-q", "1", "-t", topic("set"), "-m", payload]
                                     + (retained ? ["-r"] : []), program: programs.publisher)
        return sent.status == 0
    }

    func payloads(_ topic: String) -> [String] { received.filter { $0.topic == topic }.map(\.payload) }

    /// The bridge's answer to command `id`.
    func result(_ id: String) -> String? { payloads(topic("result")).last { $0.contains("\"id\":\"\(id)\"") } }

    /// The `seq` of every audit event the observer received, in the order received.
    func sequences() -> [Int] {
        payloads(topic("events")).compactMap { p in
            guard let r = p.firstRange(of: "\"seq\":") else { return nil }
            return Int(p[r.upperBound...].prefix { $0.isNumber })
        }
    }

    /// The lock's newest audit sequence number (`events` past the end answers "... last=N").
    func lastEventSequence() throws(RuntimeError) -> Int {
        let answer = try world.runTool(["lock-ctl", "--state-dir", world.lockState, "events", "\(UInt32.max)"])
        guard let r = answer.output.firstRange(of: "last=") else { throw RuntimeError("lock-ctl events: \(answer.output)") }
        return Int(answer.output[r.upperBound...].prefix { $0.isNumber }) ?? 0
    }
}
