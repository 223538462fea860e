import LatchkeyPosix
import LatchkeySim
import LatchkeyTransport

/// One attached agent process, in the air: the controller's delegate and each of its links',
/// forwarding every call and callback over the agent's socket. It holds every link of its
/// controller (as the kernel would) and drops one the remote app has not claimed after
/// `AirServer.unclaimedLinkTimeout`, as the in-process controller does; when the agent goes,
/// `detachApplication()` hands the links back to the controller's own rule. PDUs the air-side
/// link refuses are parked in order and fed as `linkIsWritable` comes (`RemoteLink`).
final class AgentSession: BluetoothTransportDelegate, ATTLinkDelegate {
    let controller: SimulatedController
    private let channel: PacketChannel
    private unowned let server: AirServer

    private struct LinkState {
        let link: any ATTLink
        var claimed: Bool
        var countdown: Scheduled?
        var parked: [[UInt8]] = []
        var window: Int
    }
    private var links: [LinkID: LinkState] = [:]
    private var lastStatus: ControllerStatus?
    private var commandsProcessed: UInt32 = 0

    init(controller: SimulatedController, channel: PacketChannel, server: AirServer) {
        self.controller = controller
        self.channel = channel
        self.server = server
        channel.onMessage = { [weak self] bytes in self?.receive(bytes) }
        channel.onClose = { [weak self] _ in self?.ended() }
    }

    func isClaimed(_ id: LinkID) -> Bool { links[id]?.claimed ?? false }

    /// Attaches to the controller and tells the agent what the system holds.
    func welcome() {
        controller.delegate = self
        var descriptions: [LinkDescription] = []
        for link in controller.connectedLinks {
            link.delegate = self
            links[link.id] = LinkState(link: link, claimed: false, window: Self.window(of: link))
            startCountdown(link.id)
            descriptions.append(describe(link))
        }
        let status = ControllerStatus(of: controller)
        lastStatus = status
        send(.welcome(version: AirMessage.version, status: status, links: descriptions))
    }

    func close() { channel.close() }

    private func ended() {
        for state in links.values { state.countdown?.cancel() }
        links = [:]
        controller.detachApplication()
        server.sessionDidEnd(self)
    }

    private func send(_ message: AirMessage) { channel.send(message.encoded()) }

    private func reject(_ error: AirProtocolError) { server.reject(channel, "\(error)") }

    // MARK: From the agent

    private func receive(_ bytes: [UInt8]) {
        let message: AirMessage
        do { message = try AirMessage(decoding: bytes) } catch { return reject(error) }
        switch message {
        case .startAdvertising(let advertisement): command { () throws(TransportError) in
            try controller.startAdvertising(advertisement) }
        case .stopAdvertising: command { controller.stopAdvertising() }
        case .startScanning(let parameters): command { () throws(TransportError) in
            try controller.startScanning(parameters) }
        case .stopScanning: command { controller.stopScanning() }
        case .addPendingConnection(let peer): command { () throws(TransportError) in
            try controller.addPendingConnection(to: peer) }
        case .removePendingConnection(let peer): command { controller.removePendingConnection(to: peer) }
        case .setConnectionParameters(let parameters): command { () throws(TransportError) in
            try controller.setConnectionParameters(parameters) }
        case .linkSend(let id, let pdu): linkSend(id, pdu)
        case .linkDisconnect(let id): links[id]?.link.disconnect()
        case .linkRequestInterval(let id, let interval):
            guard let link = links[id]?.link else { return }  // gone: its linkDown is on the way
            if !link.requestConnectionInterval(interval) {
                send(.commandFailed(TransportError(.invalidParameters, "connection interval \(interval) refused on \(id)")))
            }
        case .linkClaim(let id):
            links[id]?.claimed = true
            links[id]?.countdown?.cancel()
            links[id]?.countdown = nil
        case .linkRelease(let id):
            guard links[id] != nil else { return }
            links[id]?.claimed = false
            startCountdown(id)
        default:
            reject(AirProtocolError(.unexpected, "\(message) from an agent"))
        }
    }

    /// Runs one transport call; a refusal goes back as `.commandFailed`, and the status
    /// after every command lets the agent's mirror settle.
    private func command(_ call: () throws(TransportError) -> Void) {
        do { try call() } catch { send(.commandFailed(error)) }
        commandsProcessed &+= 1
        let status = ControllerStatus(of: controller)
        lastStatus = status
        send(.status(status, commandsProcessed: commandsProcessed))
    }

    private func linkSend(_ id: LinkID, _ pdu: [UInt8]) {
        guard var state = links[id] else { return }  // gone: its linkDown is on the way
        guard pdu.count <= state.link.maximumTransmissionUnit else {
            return reject(AirProtocolError(.invalidValue, "PDU of \(pdu.count) bytes over the bearer MTU "
                                           + "\(state.link.maximumTransmissionUnit) on \(id)"))
        }
        guard state.parked.count < state.window else {
            return reject(AirProtocolError(.unexpected, "more than \(state.window) PDUs in flight on \(id)"))
        }
        state.parked.append(pdu)
        links[id] = state
        feed(id)
    }

    /// Hands parked PDUs to the link until it is full; credits back what it took.
    private func feed(_ id: LinkID) {
        guard var state = links[id] else { return }
        var accepted = 0
        loop: while let pdu = state.parked.first {
            switch state.link.send(pdu) {
            case .sent:
                state.parked.removeFirst()
                accepted += 1
            case .full:
                break loop  // linkIsWritable follows
            case .disconnected:
                state.parked = []  // linkDown follows
            }
        }
        links[id] = state
        if accepted > 0 { send(.linkAccepted(id, count: UInt16(accepted))) }
    }

    private func startCountdown(_ id: LinkID) {
        links[id]?.countdown?.cancel()
        let timeout = server.unclaimedLinkTimeout
        links[id]?.countdown = controller.loop.schedule(after: timeout) { [weak self] in
            guard let self, let state = links[id], !state.claimed else { return }
            links[id]?.countdown = nil
            server.log?("\(controller.address): \(id) unclaimed for \(timeout), dropped")
            state.link.disconnect()
        }
    }

    private func statusMayHaveChanged() {
        let status = ControllerStatus(of: controller)
        guard status != lastStatus else { return }
        lastStatus = status
        send(.status(status, commandsProcessed: commandsProcessed))
    }

    private func describe(_ link: any ATTLink) -> LinkDescription {
        LinkDescription(id: link.id, peer: link.peer, role: link.role,
                        maximumTransmissionUnit: link.maximumTransmissionUnit, window: Self.window(of: link),
                        connectionInterval: link.connectionInterval)
    }

    /// The remote sender's window: the air-side link's own transmit capacity.
    private static func window(of link: any ATTLink) -> Int {
        (link as? SimulatedLink)?.transmitCapacity ?? SimulatedLink.defaultTransmitCapacity
    }

    // MARK: From the simulated controller

    func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) {
        statusMayHaveChanged()
    }

    func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {
        send(.advertisementReport(report))
    }

    func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        link.delegate = self
        links[link.id] = LinkState(link: link, claimed: true, window: Self.window(of: link))
        send(.linkUp(describe(link)))
        statusMayHaveChanged()
    }

    func link(_ link: any ATTLink, didReceive pdu: [UInt8]) {
        guard links[link.id]?.claimed == true else { return }  // nobody reads the socket: lost
        send(.linkReceived(link.id, pdu))
    }

    func linkIsWritable(_ link: any ATTLink) { feed(link.id) }

    func linkDidUpdateConnectionInterval(_ link: any ATTLink) {
        guard links[link.id] != nil, let interval = link.connectionInterval else { return }
        send(.linkInterval(link.id, interval))
    }

    func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason) {
        links.removeValue(forKey: link.id)?.countdown?.cancel()
        send(.linkDown(link.id, reason))
        statusMayHaveChanged()
    }
}
