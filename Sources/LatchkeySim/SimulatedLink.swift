import LatchkeyTransport

/// One end of a simulated link: what one device's application sees (an L2CAP ATT socket
/// on Linux). Both ends share the `LinkID`; timing lives in `SimulatedConnection`.
public final class SimulatedLink: ATTLink {
    /// PDUs one end may have queued before `send` says `.full`. Our bound, standing in for
    /// a small socket send buffer: small enough that chunked transfers meet back-pressure
    /// in tests, as they do against the kernel's EAGAIN.
    public static let defaultTransmitCapacity = 8
    /// At most this many PDUs per direction per connection event. The spec sets no number (MD
    /// lets an event go on while both sides have data, Core Vol 6 Part B 4.5.6); 4 is a
    /// conservative figure for controllers with a few ACL buffers. The airtime bounds it
    /// further at short intervals (`LinkLayerTiming`).
    public static let defaultPacketsPerEvent = 4
    /// 251-byte LE data length (Core Vol 6 Part B 4.5.10) minus the 4-byte L2CAP header.
    public static let defaultMaximumTransmissionUnit = 247
    /// How long the kernel keeps a link no socket uses (HCI_DISCONN_TIMEOUT, 2 s,
    /// include/net/bluetooth/hci.h).
    public static let unclaimedLinkTimeout = Duration.seconds(2)

    enum Phase { case up, closing, closed }

    public let id: LinkID
    public let peer: BluetoothAddress
    public let role: LinkRole
    public let maximumTransmissionUnit: Int
    public let transmitCapacity: Int
    /// The application's end of the link. While nobody holds it, the link counts as
    /// unclaimed and is dropped after `unclaimedLinkTimeout`.
    public weak var delegate: (any ATTLinkDelegate)? {
        didSet { delegate == nil ? startUnclaimedCountdown() : stopUnclaimedCountdown() }
    }

    let controller: SimulatedController
    let connection: SimulatedConnection
    private(set) var phase = Phase.up
    private(set) var transmitQueue: [[UInt8]] = []
    /// Set when `send` answered `.full`; cleared when `linkIsWritable` is sent.
    private var owesWritable = false
    private var unclaimedTimer: Scheduled?

    init(id: LinkID, peer: BluetoothAddress, role: LinkRole, controller: SimulatedController,
         connection: SimulatedConnection) {
        self.id = id
        self.peer = peer
        self.role = role
        self.controller = controller
        self.connection = connection
        self.maximumTransmissionUnit = controller.air.maximumTransmissionUnit
        self.transmitCapacity = controller.air.transmitCapacity
    }

    public var isConnected: Bool { phase == .up }
    /// The interval in force: the one the central chose when the link formed, or the last
    /// connection update's from its instant on.
    public var connectionInterval: Duration? { connection.interval }

    /// The central's LE Connection Update (`SimulatedConnection.requestInterval`). A
    /// peripheral cannot order one (it could only ask, with an L2CAP request the sim does not
    /// model), nor can anyone ask for an interval outside the Core's 7.5 ms–4 s or one the
    /// supervision timeout would not survive (it must exceed two intervals, Vol 6 Part B 4.5.2).
    public func requestConnectionInterval(_ interval: Duration) -> Bool {
        guard role == .central, phase == .up, interval >= .microseconds(7_500), interval <= .seconds(4),
              connection.supervisionTimeout > interval * 2 else { return false }
        connection.requestInterval(interval)
        return true
    }
    /// PDUs queued and not yet carried.
    public var queuedCount: Int { transmitQueue.count }
    /// Sends answered `.full` so far: how often the sender met back-pressure.
    public private(set) var refusedSends = 0

    /// The simulated system keeps every link through its application's death (a detached
    /// device keeps its links), and what the application kept with it, as the kernel
    /// transport does in systemd's descriptor store.
    public private(set) var keptApplicationState: [UInt8]?

    public func keep(applicationState state: [UInt8]) throws(TransportError) -> Bool {
        if let keepFailure { throw keepFailure }
        keptApplicationState = state
        return true
    }

    /// When set, `keep(applicationState:)` fails with it (a store that refuses, for tests).
    public var keepFailure: TransportError?

    public func send(_ pdu: [UInt8]) -> SendResult {
        guard phase == .up else { return .disconnected }
        precondition(pdu.count <= maximumTransmissionUnit,
                     "PDU of \(pdu.count) bytes exceeds the bearer MTU \(maximumTransmissionUnit)")
        guard transmitQueue.count < transmitCapacity else {
            owesWritable = true
            refusedSends += 1
            return .full
        }
        transmitQueue.append(pdu)
        connection.scheduleEventIfNeeded()
        return .sent
    }

    /// Ends the link at the next connection event; what is still queued is dropped.
    public func disconnect() {
        connection.terminate(from: self, localReason: .localHostTerminated, remoteReason: .remoteUserTerminated)
    }

    // MARK: For the connection

    /// The `index`-th PDU waiting to be carried, if there is one.
    func queuedPDU(at index: Int) -> [UInt8]? {
        index < transmitQueue.count ? transmitQueue[index] : nil
    }

    /// Takes up to `count` PDUs off the transmit queue.
    func dequeue(upTo count: Int) -> [[UInt8]] {
        let batch = Array(transmitQueue.prefix(count))
        transmitQueue.removeFirst(batch.count)
        return batch
    }

    func beginClosing() {
        phase = .closing
        transmitQueue = []
        owesWritable = false
    }

    /// Marks the end closed and tells the application on the next turn.
    func close(reason: DisconnectReason) {
        guard phase != .closed else { return }
        phase = .closed
        transmitQueue = []
        stopUnclaimedCountdown()
        controller.linkDidClose(self)
        controller.loop.execute { [self] in delegate?.link(self, didDisconnect: reason) }
    }

    func receive(_ pdu: [UInt8]) {
        guard phase == .up else { return }
        delegate?.link(self, didReceive: pdu)  // unclaimed: nobody reads the socket, the PDU is lost
    }

    /// After the queue was drained at an event: the owed `linkIsWritable`, once per full episode.
    func noteRoom() {
        guard owesWritable, phase == .up, transmitQueue.count < transmitCapacity else { return }
        owesWritable = false
        delegate?.linkIsWritable(self)
    }

    // MARK: The unclaimed-link rule

    func startUnclaimedCountdown() {
        guard phase == .up, unclaimedTimer == nil else { return }
        unclaimedTimer = controller.loop.schedule(after: Self.unclaimedLinkTimeout) { [weak self] in
            guard let self else { return }
            unclaimedTimer = nil
            // The kernel's idle-link drop is an HCI Disconnect with "remote user terminated"
            // (hci_conn.c, hci_conn_timeout), which the peer sees as such.
            if delegate == nil { disconnect() }
        }
    }

    private func stopUnclaimedCountdown() {
        unclaimedTimer?.cancel()
        unclaimedTimer = nil
    }
}
