/// One MQTT application message, as published or received.
public struct MQTTMessage: Equatable, Sendable {
    public var topic: String
    public var payload: [UInt8]
    /// 0 (at most once) or 1 (at least once); the bridge never needs 2.
    public var qos: Int
    public var retain: Bool
    /// MQTT 5 Message Expiry Interval, seconds: a broker drops the message once it has waited
    /// this long (a command that sat in a queue while the bridge was away never arrives late).
    /// On a received message: what remained of it when the broker sent it; nil when none was set.
    public var expirySeconds: UInt32?

    public init(topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = false, expirySeconds: UInt32? = nil) {
        self.topic = topic; self.payload = payload; self.qos = qos; self.retain = retain
        self.expirySeconds = expirySeconds
    }

    public init(topic: String, text: String, qos: Int = 1, retain: Bool = false, expirySeconds: UInt32? = nil) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain, expirySeconds: expirySeconds)
    }

    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// Where and how to reach the broker, and who we are there.
public struct MQTTEndpoint: Equatable, Sendable {
    public enum Security: Equatable, Sendable {
        case plain
        /// `mqtts://`: the broker's certificate must chain to `caFile`; `clientCertificate`
        /// (certificate file, key file) when the broker asks for one.
        case tls(caFile: String, clientCertificate: (certificate: String, key: String)?)

        public static func == (a: Security, b: Security) -> Bool {
            switch (a, b) {
            case (.plain, .plain): true
            case (.tls(let ca1, let c1), .tls(let ca2, let c2)):
                ca1 == ca2 && c1?.certificate == c2?.certificate && c1?.key == c2?.key
            default: false
            }
        }
    }

    public var host: String
    public var port: Int
    public var security: Security
    public var clientID: String
    public var username: String?
    public var password: String?
    public var keepaliveSeconds: Int
    /// Published by the broker when this client's connection dies without a DISCONNECT.
    public var will: MQTTMessage?

    public init(host: String, port: Int, security: Security = .plain, clientID: String, username: String? = nil,
                password: String? = nil, keepaliveSeconds: Int = 30, will: MQTTMessage? = nil) {
        self.host = host; self.port = port; self.security = security; self.clientID = clientID
        self.username = username; self.password = password; self.keepaliveSeconds = keepaliveSeconds; self.will = will
    }
}

/// Why a connection attempt ended without a session.
public enum MQTTConnectFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The broker answered CONNACK with a refusal (MQTT 5 reason code).
    case refused(reasonCode: Int, reason: String)
    /// No broker reached: refused, unreachable, TLS handshake, DNS, ...
    case unreachable(String)

    /// A refusal no retry can fix (credentials, authorization): the bridge says so once.
    public var isPermanent: Bool {
        if case .refused(let code, _) = self { return code == 134 || code == 135 || code == 133 || code == 140 }
        return false
    }

    public var description: String {
        switch self {
        case .refused(let code, let reason): "broker refused the connection: \(reason) (reason code \(code))"
        case .unreachable(let why): "broker unreachable: \(why)"
        }
    }
}

public struct MQTTError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
