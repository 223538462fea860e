#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMQTT
import LatchkeyPosix
import LatchkeyRuntime

/// `latchkey doctor --mqtt`: what the running bridge would meet, asked now. One connection
/// attempt to the broker with mqtt.yaml's credentials (its own client id, so a running bridge
/// keeps its session), then each agent's control socket (`status`). A broker that refuses
/// the credentials or cannot be reached is a FIX line naming the field to check: the same
/// sentence the bridge logs once while it retries with backoff.
public enum BridgeDoctor {
    /// Long enough for a TLS handshake on a Pi; a broker that has not answered by then is reported.
    public static let patience = Duration.seconds(10)

    /// Runs the checks on `loop` (the caller's, so an agent on the same loop can answer).
    public static func run(_ settings: MQTTSettings, on loop: PosixEventLoop, patience: Duration = patience) -> [DoctorFinding] {
        [broker(settings, on: loop, patience: patience)]
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

/// The outcome of one connection attempt.
private final class ConnectProbe: MQTTConnectionDelegate {
    var outcome: Result<Void, MQTTConnectFailure>?
    func mqttDidConnect(_ connection: any MQTTConnection) { outcome = .success(()) }
    func mqtt(_ connection: any MQTTConnection, didFailToConnect failure: MQTTConnectFailure) { outcome = .failure(failure) }
    func mqtt(_ connection: any MQTTConnection, didDisconnect reason: String) {
        if outcome == nil { outcome = .failure(.unreachable(reason)) }
    }
    func mqtt(_ connection: any MQTTConnection, didAcknowledge messageID: Int) {}
    func mqtt(_ connection: any MQTTConnection, didReceive message: MQTTMessage) {}
}
