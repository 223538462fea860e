import LatchkeySim
import LatchkeyTransport

/// The simulated radio takes every request at once; a real controller sometimes refuses one
/// (busy) and the kernel transport keeps the wish, reports the refusal (`didRefuse`) and asks
/// again later. This stands between an agent and its `SimulatedController` and plays that:
/// during a spell every advertising, scanning, pending-connection and timing request is
/// refused, reported, and made again every `retryIn` until the spell is over (or the wish is
/// withdrawn). A power-on, or an agent attaching, during a spell has the power refused once:
/// the radio is off to the agent until the retry (the kernel's refused Set Powered).
final class RefusingRadio: BluetoothTransport, BluetoothTransportDelegate {
    let radio: SimulatedController
    static let retryIn = Duration.seconds(2)
    /// Refusing until then (nil: taking everything).
    private var refusingUntil: Instant?
    private var wantedAdvertisement: Advertisement?
    private var wantedPeers: Set<BluetoothAddress> = []
    private var wantedTiming: ConnectionParameters?
    private var wantedScan: ScanParameters?
    /// The radio came on during a spell: the agent sees it off until the power is asked again.
    private var powerRefused = false
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
        if powerRefused {
            // The power takes at its second try; the spell refuses the agent's other requests,
            // which it makes once it hears the radio is on.
            powerRefused = false
            attempts[.power] = nil
            if radio.state == .poweredOn { delegate?.transport(self, didChangeState: .poweredOn) }
            return
        }
        if let ad = wantedAdvertisement { try? startAdvertising(ad) }
        if let scan = wantedScan { try? startScanning(scan) }
        for peer in wantedPeers.sorted() { try? addPendingConnection(to: peer) }
        if let timing = wantedTiming { try? setConnectionParameters(timing) }
    }

    /// While its power is refused the radio answers as a powered-off one: it neither
    /// advertises nor scans (the kernel's lists and the timing are kept, as while off).
    private func offWhilePowerRefused() throws(TransportError) {
        if powerRefused { throw TransportError(.poweredOff, "the radio's power was refused (simulated)") }
    }

    // MARK: BluetoothTransport

    var loop: any EventLoop { radio.loop }
    var address: BluetoothAddress { radio.address }
    var state: RadioState { powerRefused ? .poweredOff : radio.state }
    weak var delegate: (any BluetoothTransportDelegate)? {
        // A new process claims the radio after the last one was detached from it; during a
        // spell its first request, the power, is refused.
        didSet {
            radio.delegate = self
            if delegate != nil, radio.state == .poweredOn, refusing, !powerRefused {
                powerRefused = true
                refuse(.power)
            }
        }
    }

    func startAdvertising(_ advertisement: Advertisement) throws(TransportError) {
        guard state == .poweredOn, !refusing else {
            try offWhilePowerRefused()
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

    func startScanning(_ parameters: ScanParameters) throws(TransportError) {
        guard state == .poweredOn, !refusing else {
            try offWhilePowerRefused()
            if state == .poweredOn { wantedScan = parameters; refuse(.scanning); return }
            return try radio.startScanning(parameters)
        }
        wantedScan = nil
        attempts[.scanning] = nil
        try radio.startScanning(parameters)
    }

    func stopScanning() {
        wantedScan = nil
        radio.stopScanning()
    }

    /// A refused scan is not running yet.
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
        wantedScan = nil
        radio.detachApplication()
    }

    // MARK: BluetoothTransportDelegate: the radio's reports, handed on as this transport's

    func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) {
        if state == .poweredOn && refusing {
            powerRefused = true
            refuse(.power)
            return
        }
        if state != .poweredOn { powerRefused = false; attempts[.power] = nil }
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
