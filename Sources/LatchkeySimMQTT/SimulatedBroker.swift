import LatchkeyMQTT
import LatchkeyTransport

/// The simulated side of the MQTT seam: an in-process broker on an `EventLoop` (a
/// `ManualEventLoop` in tests), with retained messages, QoS 1 acknowledgements, wills,
/// credentials, `+`/`#` filters and the subscription options MQTTConnection promises. Every delivery is a loop task, so a test advances the
/// loop and sees every consequence, never sleeping. Message expiry is carried, not enforced.
public final class SimulatedBroker {
    public let loop: any EventLoop
    /// username → password; empty: anyone may connect.
    public var users: [String: String] = [:]
    public private(set) var isRunning = true
    /// Everything published to the broker, in order (tests read it like a sniffer).
    public private(set) var published: [MQTTMessage] = []
    /// False: `published` stays empty (a simulation of months would keep every message).
    public var keepsPublished = true
    public private(set) var retained: [String: MQTTMessage] = [:]
    /// CONNECTs received, refused or not.
    public private(set) var connectAttempts = 0
    private var sessions: [SimulatedMQTTConnection] = []

    public init(loop: any EventLoop) { self.loop = loop }

    public func connection(_ endpoint: MQTTEndpoint) -> SimulatedMQTTConnection {
        SimulatedMQTTConnection(broker: self, endpoint: endpoint)
    }

    /// The broker goes away: every session ends without its will being seen by anyone.
    public func stop() {
        isRunning = false
        let ending = sessions
        sessions = []
        for s in ending { loop.execute { s.brokerEnded("connection lost") } }
    }

    public func start() { isRunning = true }

    /// The client's link dies without DISCONNECT: its will is published.
    public func drop(_ connection: SimulatedMQTTConnection) {
        guard let i = sessions.firstIndex(where: { $0 === connection }) else { return }
        sessions.remove(at: i)
        if let will = connection.endpoint.will { route(will) }
        loop.execute { connection.brokerEnded("connection lost") }
    }

    func open(_ c: SimulatedMQTTConnection) -> MQTTConnectFailure? {
        connectAttempts += 1
        guard isRunning else { return .unreachable("Connection refused") }
        if !users.isEmpty, users[c.endpoint.username ?? ""] != c.endpoint.password || c.endpoint.password == nil {
            return .refused(reasonCode: 134, reason: "Bad user name or password")
        }
        sessions.removeAll { $0.endpoint.clientID == c.endpoint.clientID }
        sessions.append(c)
        return nil
    }

    func close(_ c: SimulatedMQTTConnection) { sessions.removeAll { $0 === c } }

    func route(_ message: MQTTMessage, from sender: SimulatedMQTTConnection? = nil) {
        if keepsPublished { published.append(message) }
        if message.retain {
            if message.payload.isEmpty { retained[message.topic] = nil } else { retained[message.topic] = message }
        }
        for s in sessions where s !== sender && s.filters.contains(where: { Self.matches($0, message.topic) }) {
            // Retain As Published, as every MQTTConnection subscribes: the flag stays as sent.
            loop.execute { s.deliver(message) }
        }
    }

    func subscribed(_ c: SimulatedMQTTConnection, to filter: String) {
        for m in retained.values.sorted(by: { $0.topic < $1.topic }) where Self.matches(filter, m.topic) {
            loop.execute { c.deliver(m) }
        }
    }

    /// MQTT topic filter matching: `+` one level, `#` the rest.
    public static func matches(_ filter: String, _ topic: String) -> Bool {
        let f = filter.split(separator: "/", omittingEmptySubsequences: false)
        let t = topic.split(separator: "/", omittingEmptySubsequences: false)
        for (i, level) in f.enumerated() {
            if level == "#" { return true }
            guard i < t.count, level == "+" || level == t[i] else { return false }
        }
        return f.count == t.count
    }
}

public final class SimulatedMQTTConnection: MQTTConnection {
    public weak var delegate: (any MQTTConnectionDelegate)?
    let broker: SimulatedBroker
    public let endpoint: MQTTEndpoint
    private(set) var filters: [String] = []
    public private(set) var isConnected = false
    private var nextID = 1

    init(broker: SimulatedBroker, endpoint: MQTTEndpoint) {
        self.broker = broker
        self.endpoint = endpoint
    }

    public func connect() {
        guard !isConnected else { return }
        broker.loop.execute { [weak self] in
            guard let self else { return }
            if let failure = self.broker.open(self) {
                self.delegate?.mqtt(self, didFailToConnect: failure)
                return
            }
            self.isConnected = true
            self.filters = []
            self.delegate?.mqttDidConnect(self)
        }
    }

    public func disconnect() {
        guard isConnected else { return }
        isConnected = false
        broker.close(self)
        broker.loop.execute { [weak self] in
            guard let self else { return }
            self.delegate?.mqtt(self, didDisconnect: "disconnected")
        }
    }

    public func publish(_ message: MQTTMessage) throws(MQTTError) -> Int {
        guard isConnected else { throw MQTTError("publish to \(message.topic): The client is not currently connected.") }
        let id = nextID
        nextID += 1
        broker.route(message, from: self)
        if message.qos > 0 {
            broker.loop.execute { [weak self] in
                guard let self, self.isConnected else { return }
                self.delegate?.mqtt(self, didAcknowledge: id)
            }
        }
        return id
    }

    public func subscribe(_ filter: String) throws(MQTTError) {
        guard isConnected else { throw MQTTError("subscribe to \(filter): The client is not currently connected.") }
        filters.append(filter)
        broker.subscribed(self, to: filter)
    }

    func deliver(_ message: MQTTMessage) {
        guard isConnected else { return }
        delegate?.mqtt(self, didReceive: message)
    }

    func brokerEnded(_ why: String) {
        guard isConnected else { return }
        isConnected = false
        delegate?.mqtt(self, didDisconnect: why)
    }
}
