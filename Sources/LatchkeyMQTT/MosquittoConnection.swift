import LatchkeyPosix
import LatchkeyTransport

/// An MQTT 5 connection through libmosquitto, driven by the real-time loop: its socket is
/// watched like any other, a timer runs the keepalive, and every callback arrives on the
/// loop (libmosquitto starts no thread). Reconnecting is the owner's decision: after a
/// `didDisconnect` or `didFailToConnect`, `connect()` starts a fresh attempt with a fresh
/// libmosquitto client. A reused one would send again, after the next CONNACK, every QoS 1
/// message still in flight when the link went, and the owner republishes those itself (the
/// bridge from its event cursor): each would reach the broker twice.
public final class MosquittoConnection: MQTTConnection {
    public weak var delegate: (any MQTTConnectionDelegate)?
    private let loop: PosixEventLoop
    private var client: Mosquitto
    private let endpoint: MQTTEndpoint
    private var watch: Watch?
    private var keepaliveTimer: Scheduled?
    private var attempted = false
    private var session: SessionState = .idle

    private enum SessionState { case idle, connecting, connected }

    public init(endpoint: MQTTEndpoint, loop: PosixEventLoop) throws(MQTTError) {
        self.loop = loop
        self.endpoint = endpoint
        client = try Self.client(for: endpoint)
        answer(client)
    }

    /// A libmosquitto client with the endpoint's credentials, TLS files and will.
    private static func client(for endpoint: MQTTEndpoint) throws(MQTTError) -> Mosquitto {
        let client = try Mosquitto(clientID: endpoint.clientID)
        if let user = endpoint.username { try client.credentials(username: user, password: endpoint.password) }
        if case .tls(let ca, let cert) = endpoint.security {
            try client.tls(caFile: ca, certificate: cert?.certificate, key: cert?.key)
        }
        if let will = endpoint.will { try client.will(will) }
        return client
    }

    /// Routes `client`'s callbacks to this connection and its delegate.
    private func answer(_ client: Mosquitto) {
        client.onConnect = { [weak self] code in self?.connectAnswered(code) }
        client.onDisconnect = { [weak self] code in
            self?.ended(code == 0 ? "disconnected" : Mosquitto.failureText(code))
        }
        client.onPublish = { [weak self] mid in
            guard let self else { return }
            self.delegate?.mqtt(self, didAcknowledge: mid)
        }
        client.onMessage = { [weak self] message in
            guard let self else { return }
            self.delegate?.mqtt(self, didReceive: message)
        }
    }

    public func connect() {
        guard session == .idle else { return }
        if attempted {
            // Nothing of the last session is sent again (the type's comment says why).
            do {
                let retired = client
                client = try Self.client(for: endpoint)
                answer(client)
                // Destroyed on a later turn of the loop, never inside one of its own callbacks.
                loop.execute { withExtendedLifetime(retired) {} }
            } catch {
                loop.execute { [weak self] in
                    guard let self else { return }
                    self.delegate?.mqtt(self, didFailToConnect: .unreachable(error.message))
                }
                return
            }
        }
        let rc = client.connect(host: endpoint.host, port: endpoint.port, keepalive: endpoint.keepaliveSeconds)
        attempted = true
        guard rc == Mosquitto.success else {
            let why = Mosquitto.failureText(rc)
            loop.execute { [weak self] in
                guard let self else { return }
                self.delegate?.mqtt(self, didFailToConnect: .unreachable(why))
            }
            return
        }
        session = .connecting
        watch = loop.watch(fd: client.socket, events: [.readable, .writable]) { [weak self] ready in self?.service(ready) }
        scheduleKeepalive()
    }

    public func disconnect() {
        guard session != .idle else { return }
        _ = client.disconnect()
        flush()
        ended("disconnected")
    }

    public func publish(_ message: MQTTMessage) throws(MQTTError) -> Int {
        let mid = try client.publish(message)
        updateInterest()
        return mid
    }

    public func subscribe(_ filter: String) throws(MQTTError) {
        try client.subscribe(filter)
        updateInterest()
    }

    // MARK: Driving libmosquitto

    private func service(_ ready: IOEvents) {
        if !ready.intersection([.writable]).isEmpty {
            let rc = client.write()
            guard rc == Mosquitto.success else { return ended(Mosquitto.failureText(rc)) }
        }
        if !ready.intersection([.readable, .hangUp, .error]).isEmpty {
            // A TLS record may hold several packets that poll no longer reports: read a few.
            for _ in 0..<8 where session != .idle {
                let rc = client.read()
                guard rc == Mosquitto.success else { return ended(Mosquitto.failureText(rc)) }
            }
        }
        updateInterest()
    }

    private func updateInterest() {
        watch?.events = client.wantsWrite ? [.readable, .writable] : [.readable]
    }

    /// Writes what is queued (a DISCONNECT) before the socket closes.
    private func flush() {
        for _ in 0..<4 where client.wantsWrite { _ = client.write() }
    }

    private func scheduleKeepalive() {
        keepaliveTimer = loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self, self.session != .idle else { return }
            let rc = self.client.misc()
            guard rc == Mosquitto.success else { return self.ended(Mosquitto.failureText(rc)) }
            self.updateInterest()
            self.scheduleKeepalive()
        }
    }

    private func connectAnswered(_ code: Int) {
        guard code == 0 else {
            let failure = MQTTConnectFailure.refused(reasonCode: code, reason: Mosquitto.reasonText(code))
            tearDown()
            delegate?.mqtt(self, didFailToConnect: failure)
            return
        }
        session = .connected
        delegate?.mqttDidConnect(self)
    }

    /// The socket is gone (or going): report it once, as a failed attempt or an ended session.
    private func ended(_ why: String) {
        let was = session
        tearDown()
        switch was {
        case .idle: return
        case .connecting: delegate?.mqtt(self, didFailToConnect: .unreachable(why))
        case .connected: delegate?.mqtt(self, didDisconnect: why)
        }
    }

    private func tearDown() {
        session = .idle
        watch?.cancel()
        watch = nil
        keepaliveTimer?.cancel()
        keepaliveTimer = nil
    }
}
