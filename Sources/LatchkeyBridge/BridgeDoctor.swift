#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMQTT
import LatchkeyPosix
import LatchkeyControl

/// `latchkey doctor --mqtt`: what the running bridge would meet, asked now. One connection
/// attempt to the broker with mqtt.yaml's credentials (its own client id, so a running bridge
/// keeps its session), then each agent's control socket (`status`). A broker that refuses
/// the credentials or cannot be reached is a FIX line naming the field to check: the same
/// sentence the bridge logs once while it retries with backoff.
public enum BridgeDoctor {
    /// Long enough for a TLS handshake on a Pi; a broker that has not answered by then is reported.
    public static let patience = Duration.seconds(10)

    /// Runs the checks on `loop` (the caller's, so an agent on the same loop can answer).
    public static func run(_ settings: MQTTSettings, on loop: PosixEventLoop, patience: Duration = patience,
                           delivery: Duration = delivery) -> [DoctorFinding] {
        let reached = broker(settings, on: loop, patience: patience)
        return [reached]
            + (reached.verdict == .ok ? exposure(settings, on: loop, patience: patience, delivery: delivery) : [])
            + settings.locks.map { agent("lock \($0.name)", socket: $0.controlSocket, on: loop, patience: patience) }
            + settings.phones.map { agent("phone \($0.name)", socket: $0.controlSocket, on: loop, patience: patience) }
    }

    static func broker(_ settings: MQTTSettings, on loop: PosixEventLoop, patience: Duration) -> DoctorFinding {
        var endpoint = settings.endpoint
        endpoint.clientID = String((endpoint.clientID + "-doctor").utf8.prefix(64)) ?? "latchkey-doctor"
        let scheme = if case .tls = endpoint.security { "mqtts" } else { "mqtt" }
        let url = "\(scheme)://\(endpoint.host):\(endpoint.port)"
        let connection: MosquittoConnection
        do { connection = try MosquittoConnection(endpoint: endpoint, loop: loop) } catch {
            return .fix("broker \(url): \(error)")
        }
        let probe = ConnectProbe()
        connection.delegate = probe
        connection.connect()
        // A loop error ends the wait like the timeout: no outcome, reported below.
        _ = try? loop.run(until: { probe.outcome != nil }, timeout: patience)
        connection.disconnect()
        switch probe.outcome {
        case .success?:
            return .ok("broker \(url) accepts the bridge" + (endpoint.username.map { " (user \($0))" } ?? ""))
        case .failure(let failure)?:
            return .fix("broker \(url): \(failure)\(Bridge.fix(for: failure))")
        case nil:
            return .fix("broker \(url): no answer within \(patience); check broker in mqtt.yaml and the network")
        }
    }

    /// The bridge reaches `socket` and the agent answers `status`.
    static func agent(_ name: String, socket: String, on loop: PosixEventLoop, patience: Duration) -> DoctorFinding {
        let link = ControlSocketLink(path: socket, loop: loop)
        var answer: (ok: Bool, final: String)?
        link.request("status", line: { _ in }, done: { answer = ($0, $1) })
        _ = try? loop.run(until: { answer != nil }, timeout: patience)  // no answer: reported below
        guard let answer else { return .fix("\(name): \(socket) did not answer `status` within \(patience)") }
        guard answer.ok else {
            return .fix("\(name): \(answer.final.dropFirst(answer.final.hasPrefix("error ") ? 6 : 0)); is the agent running, "
                        + "and does its configuration name this user (bridge_user: latchkey-mqtt)?")
        }
        return .ok("\(name): \(socket) answers (\(answer.final.dropFirst(3).split(separator: " ").prefix(2).joined(separator: " ")))")
    }
}

/// The outcome of one connection attempt, and what it heard.
private final class ConnectProbe: MQTTConnectionDelegate {
    var outcome: Result<Void, MQTTConnectFailure>?
    var acknowledged: Set<Int> = []
    var received: [MQTTMessage] = []
    func mqttDidConnect(_ connection: any MQTTConnection) { outcome = .success(()) }
    func mqtt(_ connection: any MQTTConnection, didFailToConnect failure: MQTTConnectFailure) { outcome = .failure(failure) }
    func mqtt(_ connection: any MQTTConnection, didDisconnect reason: String) {
        if outcome == nil { outcome = .failure(.unreachable(reason)) }
    }
    func mqtt(_ connection: any MQTTConnection, didAcknowledge messageID: Int) { acknowledged.insert(messageID) }
    func mqtt(_ connection: any MQTTConnection, didReceive message: MQTTMessage) { received.append(message) }
}

// MARK: What a stranger on the broker can do

extension BridgeDoctor {
    /// How long a probe message may take from the broker to a subscriber that may read it.
    public static let delivery = Duration.seconds(2)

    /// The broker is the door's network side (docs/SECURITY.md, "The network door"): an anonymous
    /// client tries what a stranger on the house's network would (connect, subscribe to each
    /// prefix, publish on the command topics), and each that works is a FIX. Delivery, not SUBACK
    /// or PUBACK, says what got through (Mosquitto grants a subscription its ACL denies and filters
    /// each message). The bridge's own connection listens on the command topics and publishes a
    /// probe under each prefix; the anonymous command, `{"doctor":"probe"}`, a bridge refuses.
    static func exposure(_ settings: MQTTSettings, on loop: PosixEventLoop, patience: Duration,
                         delivery: Duration) -> [DoctorFinding] {
        let prefixes = settings.locks.map { ($0.topicPrefix, [$0.topicPrefix + "/set"]) }
            + settings.phones.map { ($0.topicPrefix, $0.arrivalIntent ? [$0.topicPrefix + "/arriving/set"] : []) }
        var own = settings.endpoint
        own.clientID = String((own.clientID + "-doctor").utf8.prefix(64)) ?? "latchkey-doctor"
        var anonymous = settings.endpoint
        anonymous.clientID = String((anonymous.clientID + "-doctor-anonymous").utf8.prefix(64)) ?? "latchkey-doctor-anonymous"
        anonymous.username = nil
        anonymous.password = nil
        if case .tls(let ca, _) = anonymous.security { anonymous.security = .tls(caFile: ca, clientCertificate: nil) }
        let ownProbe = ConnectProbe(), strangerProbe = ConnectProbe()
        let ownConnection: MosquittoConnection, stranger: MosquittoConnection
        do {
            ownConnection = try MosquittoConnection(endpoint: own, loop: loop)
            stranger = try MosquittoConnection(endpoint: anonymous, loop: loop)
        } catch {
            return [.fix("anonymous access to the broker could not be tried: \(error)")]
        }
        defer { ownConnection.disconnect(); stranger.disconnect() }
        ownConnection.delegate = ownProbe
        stranger.delegate = strangerProbe
        ownConnection.connect()
        stranger.connect()
        // A wait the loop cannot finish leaves an outcome nil: reported below as refused or unmeasured.
        _ = try? loop.run(until: { ownProbe.outcome != nil && strangerProbe.outcome != nil }, timeout: patience)
        guard case .success? = strangerProbe.outcome else {
            return [.ok("an anonymous client is refused by the broker")]
        }
        var findings: [DoctorFinding] = [.fix("the broker accepts an anonymous client; set allow_anonymous false in "
                                              + "mosquitto.conf (docs/CONFIGURATION.md, \"A protected broker\")")]
        guard case .success? = ownProbe.outcome else {
            return findings + [.fix("the anonymous client's reach could not be measured: the bridge's own credentials "
                                    + "were refused")]
        }
        let aclFix = "; confine the prefix to the bridge's and Home Assistant's users with an ACL "
            + "(docs/CONFIGURATION.md, \"A protected broker\")"
        for (prefix, commandTopics) in prefixes {
            // The bridge's end listens first; a publication acknowledged after it is behind it.
            var ready: [Int] = []
            do {
                for t in commandTopics { try ownConnection.subscribe(t) }
                ready.append(try ownConnection.publish(MQTTMessage(topic: prefix + "/doctor", text: "ready", qos: 1, retain: false)))
                try stranger.subscribe(prefix + "/#")
                for t in commandTopics {
                    ready.append(-1 - (try stranger.publish(MQTTMessage(topic: t, text: "{\"doctor\":\"probe\"}", qos: 1,
                                                                      retain: false))))
                }
            } catch {
                findings.append(.fix("\(prefix): the probe could not be sent: \(error)"))
                continue
            }
            let acked = {
                ready.allSatisfy { $0 >= 0 ? ownProbe.acknowledged.contains($0) : strangerProbe.acknowledged.contains(-1 - $0) }
            }
            // Each wait below ends on its condition or its bound; what did not arrive by then is
            // judged as not delivered, which is the measurement.
            _ = try? loop.run(until: acked, timeout: patience)
            do {
                let id = try ownConnection.publish(MQTTMessage(topic: prefix + "/doctor", text: "probe", qos: 1, retain: false))
                _ = try? loop.run(until: { ownProbe.acknowledged.contains(id) }, timeout: patience)
            } catch {
                findings.append(.fix("\(prefix): the bridge's own probe could not be published: \(error)"))
                continue
            }
            let readable = { strangerProbe.received.contains { $0.topic.hasPrefix(prefix + "/") } }
            let commanded = { (t: String) in ownProbe.received.contains { $0.topic == t && $0.text == "{\"doctor\":\"probe\"}" } }
            _ = try? loop.run(until: { readable() && commandTopics.allSatisfy(commanded) }, timeout: delivery)
            findings.append(readable()
                ? .fix("an anonymous client can read \(prefix)/# (the audit log, the lock's state, presence)" + aclFix)
                : .ok("an anonymous client cannot read \(prefix)/#"))
            for t in commandTopics {
                findings.append(commanded(t) ? .fix("an anonymous client can publish on \(t)" + aclFix)
                                             : .ok("an anonymous client cannot publish on \(t)"))
            }
        }
        return findings
    }
}
