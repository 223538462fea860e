import LatchkeyTransport

/// The shared medium of the simulated world: where the devices are (metres on a line; two hear
/// each other within `range`), who can hear whom, and the seeded randomness of the radio. One
/// air per world; every device runs on its loop. Nothing spins: advertising events run only
/// while somebody in range could hear them, links only while they carry traffic, supervision
/// timeouts follow range changes; an idle world schedules no timer. The air owns its devices and
/// each device keeps its air alive.
public final class SimulatedAir {
    public let loop: any EventLoop

    /// Hearing distance in metres. Changing it re-evaluates every link and advertiser.
    public var range: Double { didSet { geometryDidChange() } }

    /// Capacity of each side's transmit buffer for links made from now on, in PDUs.
    public var transmitCapacity = SimulatedLink.defaultTransmitCapacity
    /// PDUs carried per direction per connection event, for links made from now on.
    public var packetsPerEvent = SimulatedLink.defaultPacketsPerEvent
    /// The bearer's ATT_MTU limit for links made from now on.
    public var maximumTransmissionUnit = SimulatedLink.defaultMaximumTransmissionUnit
    /// A passive sniffer: hears every PDU that crosses any link (from, to, PDU). There is
    /// no link-layer encryption on our links, so a real one with a capable radio hears them
    /// too; the security tests check it learns nothing it should not.
    public var sniffer: ((_ from: BluetoothAddress, _ to: BluetoothAddress, _ pdu: [UInt8]) -> Void)?

    /// Devices in the order they were added: every "for each device" walks this order, so
    /// the world does not depend on hash seeds.
    private(set) var devices: [SimulatedController] = []
    private var positions: [BluetoothAddress: Double] = [:]
    /// Links that are up, in creation order.
    var connections: [SimulatedConnection] = []
    private var lastLinkID: UInt64 = 0
    var random: SplitMix64

    public init(loop: any EventLoop, seed: UInt64 = 1, range: Double = 10) {
        self.loop = loop
        self.random = SplitMix64(seed: seed)
        self.range = range
    }

    // MARK: Devices

    /// Adds a powered-on device with its own controller. Addresses are unique in a world.
    public func addDevice(address: BluetoothAddress, position: Double = 0) -> SimulatedController {
        precondition(positions[address] == nil, "\(address) is already in this air")
        let controller = SimulatedController(address: address, air: self)
        devices.append(controller)
        positions[address] = position
        return controller
    }

    /// Takes a device out of this world, as if carried away with its radio off: its links end
    /// (the peers hear remote power off) and its address is free for another device — an
    /// attacker's, say, that sends with it.
    public func removeDevice(_ address: BluetoothAddress) {
        guard let device = device(address) else { return }
        device.powerOff()
        devices.removeAll { $0 === device }
        positions[address] = nil
        radioActivityDidChange()
    }

    public func device(_ address: BluetoothAddress) -> SimulatedController? {
        devices.first { $0.address == address }
    }

    public func position(of address: BluetoothAddress) -> Double? { positions[address] }

    /// Moves a device. Links out of range start their supervision countdown; advertisers
    /// that gained or lost listeners start or stop their event timers.
    public func setPosition(_ position: Double, of address: BluetoothAddress) {
        precondition(positions[address] != nil, "\(address) is not in this air")
        positions[address] = position
        geometryDidChange()
    }

    // MARK: Queries for the devices

    func distance(_ a: SimulatedController, _ b: SimulatedController) -> Double {
        abs((positions[a.address] ?? 0) - (positions[b.address] ?? 0))
    }

    func inRange(_ a: SimulatedController, _ b: SimulatedController) -> Bool {
        distance(a, b) <= range
    }

    /// One RSSI sample for a packet from `a` heard by `b`.
    func sampleRSSI(_ a: SimulatedController, _ b: SimulatedController) -> Int8 {
        RSSIModel.rssi(distance: distance(a, b), noise: random.next(in: RSSIModel.noise))
    }

    func makeLinkID() -> LinkID {
        lastLinkID += 1
        return LinkID(lastLinkID)
    }

    // MARK: Re-evaluation

    private func geometryDidChange() {
        for connection in connections { connection.rangeDidChange() }
        radioActivityDidChange()
    }

    /// Called after anything that changes who listens or who advertises.
    func radioActivityDidChange() {
        for device in devices { updateAdvertisingTimer(of: device) }
    }
}
