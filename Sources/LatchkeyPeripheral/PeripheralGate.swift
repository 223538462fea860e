import LatchkeyATT
import LatchkeyManagers
import LatchkeyTransport

/// The always-on part of a peripheral agent: installed as the peripheral manager's
/// delegate, it passes events to the application's delegate through an `ApplicationGate`.
///
/// While a foreground-only application layer is suspended the peripheral does not
/// advertise, reads and writes are answered with `suspendedError` (the app cannot answer
/// them), and every other event is queued for the resume. In background mode the app is
/// woken for each event, reads and writes included, and its work is timed.
public final class PeripheralGate: PeripheralManagerDelegate {
    public let manager: PeripheralManager
    public let gate: ApplicationGate
    private weak var app: (any PeripheralManagerDelegate)?

    /// Unlikely Error (0x0E, Core Vol 3 Part F 3.4.1.1): "the request cannot be completed
    /// for an unlikely reason" — the attribute exists but nobody is there to serve it.
    public static let suspendedError = ATTErrorCode.unlikelyError

    public init(manager: PeripheralManager, gate: ApplicationGate) {
        self.manager = manager
        self.gate = gate
        app = manager.delegate
        manager.delegate = self
    }

    public var mode: ExecutionMode { gate.mode }

    public func setMode(_ mode: ExecutionMode) {
        manager.setExecutionMode(mode)
        gate.setMode(mode)
        manager.setAdvertisingSuppressed(gate.isHolding)
    }

    public func suspend() {
        gate.suspend()
        manager.setAdvertisingSuppressed(gate.isHolding)
    }

    public func resume() {
        gate.resume()
        manager.setAdvertisingSuppressed(false)
    }

    // MARK: Requests that need an answer now

    public func peripheralManager(_ pm: PeripheralManager, didReceiveRead request: ReadRequest) -> Result<[UInt8], ATTErrorCode> {
        var result: Result<[UInt8], ATTErrorCode> = .failure(Self.suspendedError)
        guard !gate.isHolding else { return result }
        gate.deliver("read \(request.characteristic.uuid)") { [weak self] in
            guard let app = self?.app else { result = .failure(.unlikelyError); return }
            result = app.peripheralManager(pm, didReceiveRead: request)
        }
        return result
    }

    public func peripheralManager(_ pm: PeripheralManager, didReceiveWrite request: WriteRequest) -> ATTErrorCode? {
        var result: ATTErrorCode? = Self.suspendedError
        guard !gate.isHolding else { return result }
        gate.deliver("write \(request.characteristic.uuid)") { [weak self] in
            guard let app = self?.app else { result = .writeNotPermitted; return }
            result = app.peripheralManager(pm, didReceiveWrite: request)
        }
        return result
    }

    /// Answered synchronously like a write (the CCCD write's response waits for it). While
    /// the app is held it cannot be asked: the subscription is allowed and its event queued,
    /// as a subscription always was; what a subscriber is then sent stays the app's choice.
    public func peripheralManager(_ pm: PeripheralManager, central: Central,
                                  shouldSubscribeTo characteristic: LocalCharacteristic) -> ATTErrorCode? {
        var result: ATTErrorCode?
        guard !gate.isHolding else { return nil }
        gate.deliver("subscribe \(characteristic.uuid)") { [weak self] in
            guard let app = self?.app else { result = .unlikelyError; return }
            result = app.peripheralManager(pm, central: central, shouldSubscribeTo: characteristic)
        }
        return result
    }

    // MARK: Events

    /// Restoration comes first and in order with the rest: queued like any event while
    /// suspended, so `willRestoreState` still precedes the first state update.
    public func peripheralManager(_ pm: PeripheralManager, willRestoreState state: RestoredPeripheralState) {
        gate.deliver("restore state") { [weak self] in self?.app?.peripheralManager(pm, willRestoreState: state) }
    }

    public func peripheralManager(_ pm: PeripheralManager, didFailToPreserveState error: any Error) {
        gate.deliver("preservation failed") { [weak self] in self?.app?.peripheralManager(pm, didFailToPreserveState: error) }
    }

    public func peripheralManager(_ pm: PeripheralManager, didRefuse refusal: TransportRefusal) {
        gate.deliver("refused \(refusal.request)") { [weak self] in self?.app?.peripheralManager(pm, didRefuse: refusal) }
    }

    public func peripheralManagerDidUpdateState(_ pm: PeripheralManager) {
        gate.deliver("state \(pm.state.rawValue)") { [weak self] in self?.app?.peripheralManagerDidUpdateState(pm) }
    }

    public func peripheralManager(_ pm: PeripheralManager, didAdd service: LocalService, error: BluetoothError?) {
        gate.deliver("service added") { [weak self] in self?.app?.peripheralManager(pm, didAdd: service, error: error) }
    }

    public func peripheralManagerDidStartAdvertising(_ pm: PeripheralManager, error: BluetoothError?) {
        gate.deliver("advertising started") { [weak self] in self?.app?.peripheralManagerDidStartAdvertising(pm, error: error) }
    }

    public func peripheralManager(_ pm: PeripheralManager, central: Central, didSubscribeTo characteristic: LocalCharacteristic) {
        gate.deliver("subscribed \(central.identifier)") { [weak self] in
            self?.app?.peripheralManager(pm, central: central, didSubscribeTo: characteristic)
        }
    }

    public func peripheralManager(_ pm: PeripheralManager, central: Central,
                                  didUnsubscribeFrom characteristic: LocalCharacteristic) {
        gate.deliver("unsubscribed \(central.identifier)") { [weak self] in
            self?.app?.peripheralManager(pm, central: central, didUnsubscribeFrom: characteristic)
        }
    }

    public func peripheralManagerIsReady(toUpdateSubscribers pm: PeripheralManager) {
        gate.deliver("ready to update") { [weak self] in self?.app?.peripheralManagerIsReady(toUpdateSubscribers: pm) }
    }

    public func peripheralManager(_ pm: PeripheralManager, didConnect central: Central) {
        gate.deliver("connected \(central.identifier)") { [weak self] in self?.app?.peripheralManager(pm, didConnect: central) }
    }

    public func peripheralManager(_ pm: PeripheralManager, didDisconnect central: Central, reason: DisconnectReason) {
        gate.deliver("disconnected \(central.identifier)") { [weak self] in
            self?.app?.peripheralManager(pm, didDisconnect: central, reason: reason)
        }
    }

    public func peripheralManager(_ pm: PeripheralManager, didChangeServicesIn range: ClosedRange<UInt16>,
                                  centrals: [Central]) {
        gate.deliver("services changed") { [weak self] in
            self?.app?.peripheralManager(pm, didChangeServicesIn: range, centrals: centrals)
        }
    }
}
