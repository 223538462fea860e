import LatchkeyPosix
import LatchkeySim
import LatchkeyTransport

/// The control channel: the demo's hand on the world.
extension AirServer {
    func receiveControl(_ bytes: [UInt8], on channel: PacketChannel) {
        let message: AirMessage
        do { message = try AirMessage(decoding: bytes) } catch { return reject(channel, "\(error)") }
        let reply: AirMessage
        switch message {
        case .setPosition(let request, let address, let position):
            guard air.position(of: address) != nil else { return channel.send(unknown(address, request)) }
            air.setPosition(position, of: address)
            log?("\(address) moved to \(position) m")
            reply = .done(request: request)
        case .powerOff(let request, let address):
            guard let controller = air.device(address) else { return channel.send(unknown(address, request)) }
            controller.powerOff()
            log?("\(address) powered off")
            reply = .done(request: request)
        case .powerOn(let request, let address):
            guard let controller = air.device(address) else { return channel.send(unknown(address, request)) }
            controller.powerOn()
            log?("\(address) powered on")
            reply = .done(request: request)
        case .listDevices(let request):
            reply = .devices(request: request, addresses.compactMap(snapshot))
        default:
            return reject(channel, "\(AirProtocolError(.unexpected, "\(message) on the control channel"))")
        }
        channel.send(reply.encoded())
    }

    private func unknown(_ address: BluetoothAddress, _ request: UInt32) -> [UInt8] {
        AirMessage.failed(request: request, reason: "no device \(address) in this air").encoded()
    }

    /// One device as the control channel lists it.
    public func snapshot(_ address: BluetoothAddress) -> DeviceSnapshot? {
        guard let controller = air.device(address), let position = air.position(of: address) else { return nil }
        let session = agents[address]
        return DeviceSnapshot(
            address: address, position: position, attached: session != nil,
            status: ControllerStatus(of: controller),
            links: controller.connectedLinks.map { link in
                DeviceSnapshot.Link(id: link.id, peer: link.peer, role: link.role,
                                    claimed: session?.isClaimed(link.id) ?? false)
            })
    }
}
