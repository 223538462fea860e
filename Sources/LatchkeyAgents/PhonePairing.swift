import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity
import LatchkeyTransport

/// The phone's pairing procedure (`latchkey phone pair`): connect to the lock, write a
/// pairing request, read the lock's response on the same link, check its confirmation and
/// derive the key. It succeeds only while a window is open on the lock's side; the caller
/// stores the key (docs/SECURITY.md, "Pairing").
public final class PhonePairing: CentralManagerDelegate, PeripheralDelegate {
    public let central: CentralManager
    private let lock: Peripheral
    private let initiator: PairingInitiator
    private let events: any AgentEventSink
    private let timeout: Duration
    private var timer: Scheduled?
    private var characteristic: RemoteCharacteristic?
    private var completion: ((Result<PairedKey, PairingFailure>) -> Void)?
    private var loop: any EventLoop { central.transport.loop }

    /// 60 s: as long as the lock's usual window (`latchkey pair --window 60`).
    public static let defaultTimeout: Duration = .seconds(60)

    public init(transport: any BluetoothTransport, lockAddress: BluetoothAddress, initiator: PairingInitiator,
                events: any AgentEventSink, timeout: Duration = PhonePairing.defaultTimeout) {
        self.initiator = initiator
        self.events = events
        self.timeout = timeout
        central = CentralManager(transport: transport)
        lock = central.retrievePeripherals(withIdentifiers: [lockAddress])[0]
        central.delegate = self
        lock.delegate = self
    }

    /// Runs the procedure once; `completion` is called exactly once.
    public func start(_ completion: @escaping (Result<PairedKey, PairingFailure>) -> Void) {
        self.completion = completion
        timer = loop.schedule(after: timeout) { [weak self] in
            self?.finish(.failure(.notDelivered("no answer from the lock within \(self?.timeout ?? .zero)")))
        }
        if central.state == .poweredOn { connect() }
    }

    private func connect() {
        do {
            try central.connect(lock)
            emit("pair.connecting", ["lock": "\(lock.identifier)"])
        } catch {
            finish(.failure(.notDelivered("connect: \(error)")))
        }
    }

    private func finish(_ result: Result<PairedKey, PairingFailure>) {
        guard let completion else { return }
        self.completion = nil
        timer?.cancel()
        timer = nil
        central.cancelPeripheralConnection(lock)
        switch result {
        case .success(let key):
            emit("pair.paired", ["key": "\(key.keyID)", "role": key.role.rawValue, "code": key.comparisonCode,
                                 "lock_fingerprint": key.lockFingerprint])
        case .failure(let why):
            emit("pair.failed", ["reason": "\(why)"])
        }
        completion(result)
    }

    // MARK: CentralManagerDelegate

    public func centralManagerDidUpdateState(_ central: CentralManager) {
        if central.state == .poweredOn && completion != nil && lock.state != .connected { connect() }
    }

    public func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        emit("pair.linked", ["lock": "\(peripheral.identifier)"])
        peripheral.discoverServices([LockServiceUUID.service])
    }

    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral,
                               error: BluetoothError?) {
        finish(.failure(.notDelivered("link lost")))
    }

    // MARK: PeripheralDelegate

    public func peripheral(_ peripheral: Peripheral, didDiscoverServices error: BluetoothError?) {
        guard let service = peripheral.service(LockServiceUUID.service) else {
            finish(.failure(.notDelivered("lock service missing")))
            return
        }
        peripheral.discoverCharacteristics([LockServiceUUID.pairing], for: service)
    }

    public func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: RemoteService,
                           error: BluetoothError?) {
        guard let c = service.characteristic(LockServiceUUID.pairing) else {
            finish(.failure(.notDelivered("this lock has no pairing characteristic")))
            return
        }
        characteristic = c
        emit("pair.request_sent", ["name": initiator.name])
        peripheral.writeValue(initiator.request.bytes, for: c, withResponse: true)
    }

    public func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        guard characteristic === self.characteristic else { return }
        switch error {
        case nil:
            peripheral.readValue(for: characteristic)
        case .att(let code)?:
            finish(.failure(.refused(CommandRejection(code) ?? .malformed)))
        case let e?:
            finish(.failure(.notDelivered("\(e)")))
        }
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        guard characteristic === self.characteristic else { return }
        if let error { finish(.failure(.notDelivered("response read: \(error)"))); return }
        do throws(PairingFailure) {
            finish(.success(try initiator.complete(characteristic.value ?? [])))
        } catch {
            finish(.failure(error))
        }
    }

    private func emit(_ name: String, _ fields: KeyValuePairs<String, String> = [:]) {
        events.emit(AgentEvent(name, time: loop.now, fields.map { ($0.key, $0.value) }))
    }
}
