import LatchkeySim
import LatchkeyTransport

/// The simulated radio takes every request at once; a real controller sometimes refuses one
/// (busy, a command disallowed in its state) and the kernel transport then keeps the wish,
/// reports the refusal (`didRefuse`) and asks again after a while, until it takes. This
/// stands between an agent and its `SimulatedController` and plays that: during a refusal
/// spell every advertising, pending-connection and timing request is refused, reported, and
/// made again every `retryIn` until the spell is over (or the wish is withdrawn).
final class RefusingRadio: BluetoothTransport, BluetoothTransportDelegate {
    let radio: SimulatedController
    static let retryIn = Duration.seconds(2)
    /// Refusing until then (nil: taking everything).
    private var refusingUntil: Instant?
    private var wantedAdvertisement: Advertisement?
    private var wantedPeers: Set<BluetoothAddress> = []
    private var wantedTiming: ConnectionParameters?
    private var attempts: [TransportRefusal.Request: Int] = [:]
    private var retryScheduled = false
    /// Each refusal reported, for the world's counts.
    var refused: (TransportRefusal) -> Void = { _ in }

    init(_ radio: SimulatedController) { self.radio = radio }

    /// Every request refused for `spell` from now.
    func refuse(for spell: Duration) { refusingUntil = loop.now + spell }

    private var refusing: Bool {
        guard let until = refusingUntil else { return false }
        if loop.now >= until { refusingUntil = nil; return false }
        return true
    }

    private func refuse(_ request: TransportRefusal.Request) {
        let attempt = attempts[request, default: 0] + 1
        attempts[request] = attempt
        let refusal = TransportRefusal(request: request, reason: "Busy (simulated)", attempt: attempt, retryIn: Self.retryIn)
        refused(refusal)
        loop.execute { [weak self] in
            guard let self else { return }
            self.delegate?.transport(self, didRefuse: refusal)
        }
        guard !retryScheduled else { return }
        retryScheduled = true
        loop.schedule(after: Self.retryIn) { [weak self] in
            self?.retryScheduled = false
            self?.askAgain()
        }
    }

    /// The kept wishes, asked for again.
    private func askAgain() {
        // The simulated radio under it throws only while powered off (the agent asks again at
        // power-on) or for values it accepted before the spell: nothing here to tell.
        if let ad = wantedAdvertisement { try? startAdvertising(ad) }
        for peer in wantedPeers.sorted() { try? addPendingConnection(to: peer) }
        if let timing = wantedTiming { try? setConnectionParameters(timing) }
    }

    // MARK: BluetoothTransport

    var loop: any EventLoop { radio.loop }
    var address: BluetoothAddress { radio.address }
    var state: RadioState { radio.state }
    weak var delegate: (any BluetoothTransportDelegate)? {
        // A new process claims the radio after the last one was detached from it.
        didSet { radio.delegate = self }
    }

    func startAdvertising(_ advertisement: Advertisement) throws(TransportError) {
        guard state == .poweredOn, !refusing else {
            if state == .poweredOn { wantedAdvertisement = advertisement; refuse(.advertising); return }
            return try radio.startAdvertising(advertisement)
        }
        wantedAdvertisement = nil
        attempts[.advertising] = nil
        try radio.startAdvertising(advertisement)
    }

    func stopAdvertising() {
        wantedAdvertisement = nil
        radio.stopAdvertising()
    }

    var isAdvertising: Bool { radio.isAdvertising }

    func startScanning(_ parameters: ScanParameters) throws(TransportError) { try radio.startScanning(parameters) }
    func stopScanning() { radio.stopScanning() }
    var isScanning: Bool { radio.isScanning }

    func addPendingConnection(to peer: BluetoothAddress) throws(TransportError) {
        guard state == .poweredOn, !refusing else {
            if state == .poweredOn { wantedPeers.insert(peer); refuse(.pendingConnection(peer)); return }
            return try radio.addPendingConnection(to: peer)
        }
        wantedPeers.remove(peer)
        attempts[.pendingConnection(peer)] = nil
        try radio.addPendingConnection(to: peer)
    }

    func removePendingConnection(to peer: BluetoothAddress) {
        wantedPeers.remove(peer)
        radio.removePendingConnection(to: peer)
    }

    /// What the system holds: a refused wish is not held yet.
    var pendingConnections: Set<BluetoothAddress> { radio.pendingConnections }
    var connectedLinks: [any ATTLink] { radio.connectedLinks }

    func setConnectionParameters(_ parameters: ConnectionParameters) throws(TransportError) {
        guard state == .poweredOn, !refusing else {
            if state == .poweredOn { wantedTiming = parameters; refuse(.connectionTiming); return }
            return try radio.setConnectionParameters(parameters)
        }
        wantedTiming = nil
        attempts[.connectionTiming] = nil
        try radio.setConnectionParameters(parameters)
    }

    /// A dead process's wishes die with it (the kernel's lists stay: those are the radio's).
    func detachApplication() {
        wantedAdvertisement = nil
        wantedPeers = []
        wantedTiming = nil
        radio.detachApplication()
    }

    // MARK: BluetoothTransportDelegate: the radio's reports, handed on as this transport's

    func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) {
        delegate?.transport(self, didChangeState: state)
    }
    func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {
        delegate?.transport(self, didReceive: report)
    }
    func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        delegate?.transport(self, didConnect: link)
    }
    func transport(_ transport: any BluetoothTransport, didRefuse refusal: TransportRefusal) {
        delegate?.transport(self, didRefuse: refusal)
    }
}
