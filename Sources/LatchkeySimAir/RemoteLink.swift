import LatchkeyTransport

/// The agent-side end of a link that lives in the air process.
/// Back-pressure: this end is the authoritative bounded buffer. At most `window` PDUs may
/// be in flight to the air (sent here, not yet accepted by the air-side link); past that,
/// `send` answers `.full` and `linkIsWritable` follows once the air reports room. The air
/// parks what its own link refuses and feeds it in order as that link drains, so a full
/// air-side link stops the credits and reaches this `send` within `window` PDUs. The
/// window is the air-side link's own transmit capacity (LinkDescription.window), so the
/// end-to-end buffer is at most twice the in-process one.
public final class RemoteLink: ATTLink {
    public let id: LinkID
    public let peer: BluetoothAddress
    public let role: LinkRole
    public let maximumTransmissionUnit: Int
    /// PDUs that may be in flight to the air before `send` says `.full`.
    public let window: Int
    /// The air-side link's, as the air described it, then as its updates took effect.
    public private(set) var connectionInterval: Duration?

    /// Claiming the link (setting a delegate) tells the air to keep it; a link nobody
    /// claims is dropped after the kernel's idle-link timeout, as in-process.
    public weak var delegate: (any ATTLinkDelegate)? {
        didSet { transport?.linkDelegateDidChange(self) }
    }

    enum Phase { case up, closing, closed }
    private(set) var phase = Phase.up
    /// PDUs sent and not yet accepted by the air-side link.
    public private(set) var inFlight = 0
    /// Set when `send` answered `.full`; cleared when `linkIsWritable` is delivered.
    private var owesWritable = false
    /// Whether the air believes an application holds this link.
    var claimedOnAir: Bool
    private weak var transport: RemoteTransport?

    init(_ description: LinkDescription, claimedOnAir: Bool, transport: RemoteTransport) {
        id = description.id
        peer = description.peer
        role = description.role
        maximumTransmissionUnit = description.maximumTransmissionUnit
        window = max(1, description.window)
        connectionInterval = description.connectionInterval
        self.claimedOnAir = claimedOnAir
        self.transport = transport
    }

    public var isConnected: Bool { phase == .up }

    public func send(_ pdu: [UInt8]) -> SendResult {
        guard phase == .up, let transport else { return .disconnected }
        precondition(pdu.count <= maximumTransmissionUnit,
                     "PDU of \(pdu.count) bytes exceeds the bearer MTU \(maximumTransmissionUnit)")
        guard inFlight < window else {
            owesWritable = true
            return .full
        }
        inFlight += 1
        transport.send(.linkSend(id, pdu))
        return .sent
    }

    /// Asks the air for the central's LE Connection Update; a refusal comes back as
    /// `commandFailed`, the change as `linkInterval`.
    public func requestConnectionInterval(_ interval: Duration) -> Bool {
        guard role == .central, phase == .up, let transport else { return false }
        transport.send(.linkRequestInterval(id, interval))
        return true
    }

    public func disconnect() {
        guard phase == .up else { return }
        phase = .closing
        transport?.send(.linkDisconnect(id))
    }

    // MARK: From the air

    func accepted(_ count: Int) {
        inFlight = max(0, inFlight - count)
        guard owesWritable, phase == .up, inFlight < window else { return }
        owesWritable = false
        delegate?.linkIsWritable(self)
    }

    func received(_ pdu: [UInt8]) {
        guard phase == .up else { return }
        delegate?.link(self, didReceive: pdu)
    }

    func intervalChanged(_ interval: Duration) {
        guard phase == .up else { return }
        connectionInterval = interval
        delegate?.linkDidUpdateConnectionInterval(self)
    }

    /// The link ended; `notify` is false when this process is going away and tells nobody.
    func closed(_ reason: DisconnectReason, notify: Bool = true) {
        guard phase != .closed else { return }
        phase = .closed
        if notify { delegate?.link(self, didDisconnect: reason) }
    }
}
