import LatchkeyMQTT
import LatchkeyTransport

/// How the bridge reports what happens to it (the daemon sends it to the journal).
public enum BridgeLogLevel: Sendable { case info, notice, warning, error }

/// One MQTT session shared by every agent the bridge serves: connects, reconnects with
/// capped backoff, says once (not at every retry) why the broker cannot be used, routes
/// messages to the agents' topics and acknowledgements to the agent that published.
public final class Bridge: MQTTConnectionDelegate {
    public let connection: any MQTTConnection
    let loop: any EventLoop
    public let availabilityTopic: String
    public private(set) var isConnected = false
    /// Why the last attempt failed, until a session starts: for `status` and `doctor`.
    public private(set) var lastFailure: MQTTConnectFailure?
    /// Connection attempts that failed since the process started (each one retried after the backoff).
    public private(set) var failedAttempts = 0
    public var log: (BridgeLogLevel, String) -> Void
    private var backoff = ReconnectBackoff()
    private var retry: Scheduled?
    private var agents: [any BridgedAgent] = []
    private var handlers: [String: (MQTTMessage) -> Void] = [:]
    /// QoS 1 publications awaiting their PUBACK, by message id: the agent to tell.
    private(set) var acknowledgements: [Int: any BridgedAgent] = [:]
    private var stopped = false

    public static let online = "online"
    public static let offline = "offline"

    /// `availabilityTopic` goes in the endpoint's last will (retained "offline").
    public init(connection: any MQTTConnection, loop: any EventLoop, availabilityTopic: String,
                log: @escaping (BridgeLogLevel, String) -> Void) {
        self.connection = connection
        self.loop = loop
        self.availabilityTopic = availabilityTopic
        self.log = log
        connection.delegate = self
    }

    /// The will every bridge connection carries.
    public static func will(_ availabilityTopic: String) -> MQTTMessage {
        MQTTMessage(topic: availabilityTopic, text: offline, qos: 1, retain: true)
    }

    func add(_ agent: any BridgedAgent) { agents.append(agent) }

    public func start() {
        for a in agents { a.start() }
        connection.connect()
    }

    /// Says offline (the will is not sent on a clean DISCONNECT) and closes.
    public func stop() {
        stopped = true
        retry?.cancel()
        if isConnected { _ = publish(MQTTMessage(topic: availabilityTopic, text: Self.offline, qos: 1, retain: true)) }
        connection.disconnect()
    }

    // MARK: For the agents

    /// Publishes; returns the message id, nil when there is no session (the agent republishes
    /// what matters at the next one).
    @discardableResult
    func publish(_ message: MQTTMessage, acknowledgedBy agent: (any BridgedAgent)? = nil) -> Int? {
        guard isConnected else { return nil }
        do {
            let id = try connection.publish(message)
            if let agent, message.qos > 0 { acknowledgements[id] = agent }
            return id
        } catch {
            log(.warning, "MQTT: \(error)")
            return nil
        }
    }

    func subscribe(_ topic: String, _ handler: @escaping (MQTTMessage) -> Void) {
        handlers[topic] = handler
        guard isConnected else { return }
        do { try connection.subscribe(topic) } catch { log(.warning, "MQTT: \(error)") }
    }

    // MARK: MQTTConnectionDelegate

    public func mqttDidConnect(_ connection: any MQTTConnection) {
        isConnected = true
        backoff.reset()
        if lastFailure != nil { log(.notice, "MQTT: connected again") } else { log(.info, "MQTT: connected") }
        lastFailure = nil
        publish(MQTTMessage(topic: availabilityTopic, text: Self.online, qos: 1, retain: true))
        for topic in handlers.keys.sorted() {
            do { try connection.subscribe(topic) } catch { log(.warning, "MQTT: \(error)") }
        }
        for a in agents { a.sessionStarted() }
    }

    public func mqtt(_ connection: any MQTTConnection, didFailToConnect failure: MQTTConnectFailure) {
        failedAttempts += 1
        if failure != lastFailure {
            log(.error, "MQTT: \(failure)\(Self.fix(for: failure))" + (failure.isPermanent ? "" : "; retrying with backoff"))
        }
        lastFailure = failure
        scheduleReconnect()
    }

    /// What to check for `failure`: the end of the bridge's log line and of `doctor --mqtt`'s FIX.
    static func fix(for failure: MQTTConnectFailure) -> String {
        failure.isPermanent ? "; check username and password_file in mqtt.yaml"
            : "; check broker (and ca_file for mqtts://) in mqtt.yaml"
    }

    public func mqtt(_ connection: any MQTTConnection, didDisconnect reason: String) {
        isConnected = false
        acknowledgements = [:]
        for a in agents { a.sessionEnded() }
        guard !stopped else { return }
        log(.warning, "MQTT: connection lost (\(reason)); reconnecting")
        scheduleReconnect()
    }

    public func mqtt(_ connection: any MQTTConnection, didAcknowledge messageID: Int) {
        acknowledgements.removeValue(forKey: messageID)?.acknowledged(messageID)
    }

    public func mqtt(_ connection: any MQTTConnection, didReceive message: MQTTMessage) {
        handlers[message.topic]?(message)
    }

    private func scheduleReconnect() {
        guard !stopped else { return }
        retry?.cancel()
        retry = loop.schedule(after: backoff.next()) { [weak self] in self?.connection.connect() }
    }
}

/// An agent behind the bridge: a lock or a phone.
protocol BridgedAgent: AnyObject {
    func start()
    func sessionStarted()
    func sessionEnded()
    func acknowledged(_ messageID: Int)
}
