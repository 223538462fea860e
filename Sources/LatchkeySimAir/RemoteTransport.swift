import LatchkeyPosix
import LatchkeyTransport

/// A `BluetoothTransport` whose controller lives in the air process: the agent-side proxy of
/// one `SimulatedController`. Until the air's welcome arrives the state is `.unknown` and radio
/// calls throw `.busy`; the welcome brings the controller as the "system" kept it, with links
/// up for adoption (`connectedLinks`). State is mirrored: a call updates the mirror at once and
/// the air's status after each command corrects it (`onCommandFailed` says why), so the radio's
/// own rules fail there. If the air goes away, every link ends and the state is `.poweredOff`.
public final class RemoteTransport: BluetoothTransport {
    public let address: BluetoothAddress
    private let posixLoop: PosixEventLoop
    public var loop: any EventLoop { posixLoop }
    public private(set) var state: RadioState = .unknown
    /// Held weakly, as the simulated and Core Bluetooth transports hold their delegates.
    public weak var delegate: (any BluetoothTransportDelegate)?
    public private(set) var isAdvertising = false
    public private(set) var isScanning = false
    public private(set) var pendingConnections: Set<BluetoothAddress> = []
    /// Whether the air has welcomed us and the socket is open.
    public private(set) var isAttached = false
    /// A transport call the air-side controller refused after the remote call returned.
    public var onCommandFailed: ((TransportError) -> Void)?

    private let channel: PacketChannel
    private var links: [RemoteLink] = []
    private var commandsSent: UInt32 = 0

    /// Connects to the air at `socketPath` as the device `address`. `position` places the
    /// device if the air does not know it yet.
    public init(socketPath: String, address: BluetoothAddress, position: Double? = nil,
                loop: PosixEventLoop) throws(SystemError) {
        self.address = address
        posixLoop = loop
        channel = PacketChannel(socket: try SeqPacketSocket.connect(to: socketPath), loop: loop)
        channel.onMessage = { [weak self] bytes in self?.receive(bytes) }
        channel.onClose = { [weak self] _ in self?.airWentAway() }
        channel.send(AirMessage.helloAgent(version: AirMessage.version, address: address, position: position).encoded())
    }

    /// Closes the connection the way a dying process does: no callback follows, and the
    /// air detaches the application from its controller (the pending list stays there).
    public func close() {
        channel.onClose = nil
        channel.close()
        isAttached = false
        for link in links { link.closed(.localHostTerminated, notify: false) }
        links = []
    }

    public var connectedLinks: [any ATTLink] { links.filter(\.isConnected) }

    // MARK: BluetoothTransport

    public func startAdvertising(_ advertisement: Advertisement) throws(TransportError) {
        try requireRadio("advertise")
        isAdvertising = true
        command(.startAdvertising(advertisement))
    }

    public func stopAdvertising() {
        isAdvertising = false
        command(.stopAdvertising)
    }

    public func startScanning(_ parameters: ScanParameters) throws(TransportError) {
        try requireRadio("scan")
        isScanning = true
        command(.startScanning(parameters))
    }

    public func stopScanning() {
        isScanning = false
        command(.stopScanning)
    }

    /// Accepted while powered off, as mgmt Add Device is.
    public func addPendingConnection(to peer: BluetoothAddress) throws(TransportError) {
        try requireAttached()
        guard peer != address else { throw TransportError(.invalidParameters, "cannot connect to ourselves") }
        pendingConnections.insert(peer)
        command(.addPendingConnection(peer))
    }

    public func removePendingConnection(to peer: BluetoothAddress) {
        pendingConnections.remove(peer)
        command(.removePendingConnection(peer))
    }

    public func setConnectionParameters(_ parameters: ConnectionParameters) throws(TransportError) {
        try requireAttached()
        command(.setConnectionParameters(parameters))
    }

    private func requireAttached() throws(TransportError) {
        guard isAttached else { throw TransportError(.busy, "not attached to the air (yet)") }
    }

    private func requireRadio(_ what: String) throws(TransportError) {
        try requireAttached()
        guard state == .poweredOn else { throw TransportError(.poweredOff, "cannot \(what) while \(state)") }
    }

    /// A transport command: counted, so a status that predates it is not applied.
    private func command(_ message: AirMessage) {
        guard isAttached else { return }
        commandsSent &+= 1
        send(message)
    }

    func send(_ message: AirMessage) { channel.send(message.encoded()) }

    // MARK: From the air

    private func receive(_ bytes: [UInt8]) {
        let message: AirMessage
        do { message = try AirMessage(decoding: bytes) } catch {
            return fail("undecodable message from the air: \(error)")
        }
        switch message {
        case .welcome(let version, let status, let descriptions):
            guard version == AirMessage.version, !isAttached else { return fail("unexpected welcome v\(version)") }
            isAttached = true
            links = descriptions.map { RemoteLink($0, claimedOnAir: false, transport: self) }
            apply(status)
        case .status(let status, let processed):
            if processed == commandsSent { apply(status) } else { apply(state: status.state) }
        case .advertisementReport(let report):
            delegate?.transport(self, didReceive: report)
        case .linkUp(let description):
            let link = RemoteLink(description, claimedOnAir: true, transport: self)
            links.append(link)
            delegate?.transport(self, didConnect: link)
            if link.delegate == nil { linkDelegateDidChange(link) }  // unclaimed: let the air's rule run
        case .linkReceived(let id, let pdu):
            link(id)?.received(pdu)
        case .linkAccepted(let id, let count):
            link(id)?.accepted(Int(count))
        case .linkInterval(let id, let interval):
            link(id)?.intervalChanged(interval)
        case .linkDown(let id, let reason):
            guard let link = link(id) else { return }
            links.removeAll { $0 === link }
            link.closed(reason)
        case .commandFailed(let error):
            onCommandFailed?(error)
        case .rejected(let reason):
            fail("the air rejected us: \(reason)")
        default:
            fail("unexpected message from the air: \(message)")
        }
    }

    private func link(_ id: LinkID) -> RemoteLink? { links.first { $0.id == id } }

    func linkDelegateDidChange(_ link: RemoteLink) {
        let claimed = link.delegate != nil
        guard link.isConnected, claimed != link.claimedOnAir else { return }
        link.claimedOnAir = claimed
        send(claimed ? .linkClaim(link.id) : .linkRelease(link.id))
    }

    private func apply(_ status: ControllerStatus) {
        isAdvertising = status.isAdvertising
        isScanning = status.isScanning
        pendingConnections = Set(status.pendingConnections)
        apply(state: status.state)
    }

    private func apply(state newState: RadioState) {
        guard newState != state else { return }
        state = newState
        delegate?.transport(self, didChangeState: newState)
    }

    private func fail(_ reason: String) {
        onCommandFailed?(TransportError(.failed, reason))
        channel.close()
    }

    private func airWentAway() {
        isAttached = false
        isAdvertising = false
        isScanning = false
        let ended = links
        links = []
        for link in ended { link.closed(.connectionTimeout) }
        apply(state: .poweredOff)
    }
}
