import LatchkeyBuildInfo
import LatchkeyConfig
import LatchkeyMQTT
import LatchkeyPosix
import LatchkeyControl
import LatchkeyTransport
import Logging

/// `latchkey mqtt`: the bridge process between the agents' control sockets and a broker.
/// The only Latchkey process with network access (its unit's IPAddressAllow); it holds no
/// key and opens no store: what it can do is what the control sockets let its user do.
public enum BridgeDaemon {
    /// Reads `mqtt.yaml`; every problem is `file:line: field ...`, exit status 78.
    public static func settings(_ path: String) throws(RuntimeError) -> MQTTSettings {
        do {
            let file = try ConfigFile.load(path) { try readTextFile($0) }
            return try MQTTSettings.load(file) { try readTextFile($0) }
        } catch {
            throw RuntimeError.configuration("\(error)")
        }
    }

    /// Wires the bridge for `settings` on `loop`: one MQTT connection (libmosquitto), one
    /// link per agent. The caller runs the loop.
    public static func start(_ settings: MQTTSettings, on loop: PosixEventLoop, logger: Logger,
                             wallNow: @escaping () -> Double = Files.wallSeconds) throws(RuntimeError) -> Bridge {
        do { try Files.makeDirectory(settings.stateDirectory) } catch { throw RuntimeError("\(error)") }
        let availability = "latchkey/bridge/" + MQTTSettings.slug(settings.endpoint.clientID) + "/availability"
        var endpoint = settings.endpoint
        endpoint.will = Bridge.will(availability)
        let connection: MosquittoConnection
        do { connection = try MosquittoConnection(endpoint: endpoint, loop: loop) } catch {
            throw RuntimeError.configuration("mqtt: \(error)")
        }
        let bridge = Bridge(connection: connection, loop: loop, availabilityTopic: availability) { level, line in
            switch level {
            case .info: logger.info("\(line)")
            case .notice: logger.notice("\(line)")
            case .warning: logger.warning("\(line)")
            case .error: logger.error("\(line)")
            }
        }
        let discovery = HomeAssistantDiscovery(discoveryPrefix: settings.discoveryPrefix, bridgeAvailability: availability,
                                               softwareVersion: BuildInfo.version)
        // Each agent's bridge registers itself with `bridge`, which keeps it.
        for lock in settings.locks {
            let cursor = CursorFile(path: settings.stateDirectory + "/" + MQTTSettings.slug(lock.name) + ".cursor")
            do {
                _ = try LockBridge(lock: lock, link: ControlSocketLink(path: lock.controlSocket, loop: loop),
                                             bridge: bridge, discovery: discovery,
                                             maximumCommandAge: settings.commandMaximumAge,
                                             resultExpiry: settings.resultExpirySeconds, cursorFile: cursor, wallNow: wallNow)
            } catch {
                throw RuntimeError("\(lock.name): the event cursor \(cursor.path) cannot be read: \(error)")
            }
        }
        for phone in settings.phones {
            _ = PhoneBridge(phone: phone, link: ControlSocketLink(path: phone.controlSocket, loop: loop),
                                      bridge: bridge, discovery: discovery,
                                      maximumCommandAge: settings.commandMaximumAge, wallNow: wallNow)
        }
        bridge.start()
        return bridge
    }

    /// Runs until SIGTERM/SIGINT, then says offline and disconnects.
    public static func run(_ settings: MQTTSettings, logger: Logger) throws(RuntimeError) {
        let loop = PosixEventLoop()
        let bridge = try start(settings, on: loop, logger: logger)
        logger.info("mqtt bridge started", metadata: ["broker": "\(settings.endpoint.host):\(settings.endpoint.port)",
                                                       "locks": "\(settings.locks.count)", "phones": "\(settings.phones.count)"])
        do {
            let term = try loop.onSignal(.terminate) { bridge.stop(); loop.stop() }
            let int = try loop.onSignal(.interrupt) { bridge.stop(); loop.stop() }
            try loop.run()
            term.cancel(); int.cancel()
        } catch {
            throw RuntimeError("event loop: \(error)")
        }
    }
}
