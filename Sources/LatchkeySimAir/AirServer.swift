import LatchkeyPosix
import LatchkeySim
import LatchkeyTransport

/// The air process: one `SimulatedAir` on a real-time `PosixEventLoop`, shared by agent
/// processes over a `SOCK_SEQPACKET` Unix socket. `.helloAgent(address:)` attaches a process to
/// that device's `SimulatedController`, kept for the air's life (the "system" that outlives the
/// application), and every transport and link call is proxied (`AgentSession`); a closed socket
/// detaches it, and a second hello for the same address replaces the first. `.helloControl`
/// opens the control channel (AirServer+Control.swift).
public final class AirServer {
    /// `$XDG_RUNTIME_DIR/latchkey-air.sock`, else `/tmp/latchkey-air.sock`: per-user, short
    /// enough for sun_path (107 bytes, unix(7)).
    public static var defaultSocketPath: String { RuntimeDirectory.base + "/latchkey-air.sock" }

    public let socketPath: String
    public let loop: PosixEventLoop
    /// The simulated world; its times are the loop's instants.
    public let air: SimulatedAir
    /// A line for each attach, detach and rejection, for the demo's timeline.
    public var log: ((String) -> Void)?
    /// How long a link the remote application has not claimed is kept: the kernel's
    /// idle-link timeout, as the in-process controller applies it. Settable for tests.
    public var unclaimedLinkTimeout = SimulatedLink.unclaimedLinkTimeout

    private var listener: SeqPacketListener?
    private var acceptor: Acceptor?
    /// Connections that have not said hello yet, and control connections.
    private var connections: [ObjectIdentifier: PacketChannel] = [:]
    /// Devices in creation order (the simulated air has no public listing).
    private(set) var addresses: [BluetoothAddress] = []
    private(set) var agents: [BluetoothAddress: AgentSession] = [:]

    public init(socketPath: String = AirServer.defaultSocketPath, loop: PosixEventLoop,
                seed: UInt64 = 1, range: Double = 10) {
        self.socketPath = socketPath
        self.loop = loop
        air = SimulatedAir(loop: loop, seed: seed, range: range)
    }

    /// Listens on `socketPath` (replacing a stale socket file a dead air left behind).
    public func start() throws(SystemError) {
        guard listener == nil else { return }
        let listener = try SeqPacketListener(path: socketPath)
        self.listener = listener
        let acceptor = Acceptor(fileDescriptor: listener.fileDescriptor, loop: loop) { [weak self] in
            self?.acceptOne() ?? .empty
        }
        acceptor.onPause = { [weak self] failure, delay in self?.log?("accept: \(failure); accepting again in \(delay)") }
        self.acceptor = acceptor
    }

    /// Stops listening and closes every connection, detaching every agent.
    public func stop() {
        acceptor?.cancel()
        acceptor = nil
        listener?.close()
        listener = nil
        for channel in connections.values { channel.close() }
        connections = [:]
        for session in Array(agents.values) { session.close() }
    }

    /// The controller of `address`, if an agent has ever said hello with it.
    public func controller(_ address: BluetoothAddress) -> SimulatedController? { air.device(address) }

    /// Whether an agent process is attached to `address` right now.
    public func isAttached(_ address: BluetoothAddress) -> Bool { agents[address] != nil }

    private func acceptOne() -> Acceptor.Attempt { listener?.acceptOne(serve) ?? .empty }

    private func serve(_ socket: SeqPacketSocket) {
        let channel = PacketChannel(socket: socket, loop: loop)
        let key = ObjectIdentifier(channel)
        connections[key] = channel
        channel.onMessage = { [weak self, unowned channel] bytes in self?.receiveFirst(bytes, on: channel) }
        channel.onClose = { [weak self] _ in self?.connections[key] = nil }
    }

    /// The hello decides what the connection is.
    private func receiveFirst(_ bytes: [UInt8], on channel: PacketChannel) {
        let message: AirMessage
        do { message = try AirMessage(decoding: bytes) } catch { return reject(channel, "\(error)") }
        switch message {
        case .helloAgent(let version, _, _) where version != AirMessage.version,
             .helloControl(let version) where version != AirMessage.version:
            reject(channel, "\(AirProtocolError(.unsupportedVersion, "version \(version); this air speaks \(AirMessage.version)"))")
        case .helloAgent(_, let address, let position):
            connections[ObjectIdentifier(channel)] = nil
            attach(channel, as: address, position: position)
        case .helloControl:
            channel.onMessage = { [weak self, unowned channel] bytes in self?.receiveControl(bytes, on: channel) }
        default:
            reject(channel, "\(AirProtocolError(.unexpected, "\(message) before hello"))")
        }
    }

    private func attach(_ channel: PacketChannel, as address: BluetoothAddress, position: Double?) {
        let controller: SimulatedController
        if let existing = air.device(address) {
            controller = existing
        } else {
            controller = air.addDevice(address: address, position: position ?? 0)
            addresses.append(address)
        }
        if let previous = agents[address] {
            log?("\(address): a new agent replaces the attached one")
            previous.close()
        }
        let session = AgentSession(controller: controller, channel: channel, server: self)
        agents[address] = session
        log?("\(address): agent attached (\(controller.connectedLinks.count) links up, "
             + "\(controller.pendingConnections.count) pending)")
        session.welcome()
    }

    /// Called by a session whose socket closed.
    func sessionDidEnd(_ session: AgentSession) {
        guard agents[session.controller.address] === session else { return }
        agents[session.controller.address] = nil
        log?("\(session.controller.address): agent detached; pending list kept "
             + "(\(session.controller.pendingConnections.count) entries)")
    }

    func reject(_ channel: PacketChannel, _ reason: String) {
        log?("rejected a connection: \(reason)")
        channel.send(AirMessage.rejected(reason).encoded())
        channel.close()
    }
}
