import LatchkeyAgents
import LatchkeyCentral
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity
import LatchkeyTransport

/// A lock whose advertising says a pairing window is open (`PairingBeacon`).
public struct FoundLock: Equatable, Sendable {
    public var address: BluetoothAddress
    /// The advertised name, escaped for printing (`PairingName.escaped`); empty when none.
    public var name: String
    /// As `latchkey pair` prints it on the lock.
    public var fingerprint: String
}

/// Which lock to pair with: one at a known address whose fingerprint the owner gave, or one
/// found by a scan for locks with an open window, chosen (and its fingerprint confirmed) by
/// `choose` — nil chooses none.
public enum PairingTarget {
    case address(BluetoothAddress, fingerprint: String)
    case scan(duration: Duration, choose: ([FoundLock]) -> FoundLock?)
}

/// The phone's pairing procedure (`latchkey phone pair`): find the lock (or take its
/// address), connect, write a pairing request, read the lock's response on the same link,
/// check its confirmation against the pinned fingerprint and derive the key. It succeeds
/// only while a window is open on the lock's side, and the lock enrols the key only once its
/// owner confirmed the code this phone shows; the caller stores the key and shows the code
/// (docs/SECURITY.md, "Pairing").
public final class PhonePairing: CentralManagerDelegate, PeripheralDelegate {
    public let central: CentralManager
    private var target: PairingTarget
    private var lock: Peripheral?
    private var initiator: PairingInitiator?
    private let name: String
    private let events: any AgentEventSink
    private let timeout: Duration
    private var timer: Scheduled?
    private var characteristic: RemoteCharacteristic?
    private var found: [BluetoothAddress: FoundLock] = [:]
    private var completion: ((Result<PairedKey, PairingFailure>) -> Void)?
    private var loop: any EventLoop { central.transport.loop }
    /// Where the attempt's ephemeral key and nonce are drawn from.
    private let random: RandomSource

    /// The lock paired with (or being paired with): the target's address, or the one chosen.
    public var lockAddress: BluetoothAddress? { lock?.identifier }

    /// 60 s: as long as the lock's usual window (`latchkey pair --window 60`).
    public static let defaultTimeout: Duration = .seconds(60)
    /// How long `latchkey phone pair` listens for locks with an open window.
    public static let defaultScan: Duration = .seconds(5)

    public init(transport: any BluetoothTransport, target: PairingTarget, name: String,
                events: any AgentEventSink, timeout: Duration = PhonePairing.defaultTimeout,
                random: RandomSource = .system) {
        self.target = target
        self.random = random
        self.name = name
        self.events = events
        self.timeout = timeout
        central = CentralManager(transport: transport)
        central.delegate = self
    }

    /// Runs the procedure once; `completion` is called exactly once.
    public func start(_ completion: @escaping (Result<PairedKey, PairingFailure>) -> Void) {
        self.completion = completion
        timer = loop.schedule(after: timeout) { [weak self] in
            self?.finish(.failure(.notDelivered("no answer from the lock within \(self?.timeout ?? .zero)")))
        }
        if case .address(let address, let fingerprint) = target { choose(address, fingerprint: fingerprint) }
        if central.state == .poweredOn { proceed() }
    }

    /// Pins the lock: its address and the fingerprint its identity must have.
    private func choose(_ address: BluetoothAddress, fingerprint: String) {
        do throws(PairingSetupError) {
            initiator = try PairingInitiator(name: name, expectedFingerprint: fingerprint, random: random)
        } catch {
            finish(.failure(.setup(error)))
            return
        }
        let peripheral = central.retrievePeripherals(withIdentifiers: [address])[0]
        peripheral.delegate = self
        lock = peripheral
    }

    private func proceed() {
        guard completion != nil else { return }
        if lock != nil { connect(); return }
        guard case .scan(let duration, _) = target, !central.isScanning else { return }
        do {
            // Duplicates allowed: a lock first heard without its scan response (or before its
            // window opened) must still be listed once the beacon arrives; `found` dedupes.
            try central.scanForPeripherals(withServices: [LockServiceUUID.service],
                                           options: ScanOptions(allowDuplicates: true, duration: duration, active: true))
            emit(.pairScanning(seconds: duration))
        } catch {
            finish(.failure(.notDelivered("scan: \(error)")))
        }
    }

    private func connect() {
        guard let lock, lock.state == .disconnected else { return }
        do {
            try central.connect(lock)
            emit(.pairConnecting(lock: "\(lock.identifier)"))
        } catch {
            finish(.failure(.notDelivered("connect: \(error)")))
        }
    }

    private func finish(_ result: Result<PairedKey, PairingFailure>) {
        guard let completion else { return }
        self.completion = nil
        timer?.cancel()
        timer = nil
        central.stopScan()
        if let lock { central.cancelPeripheralConnection(lock) }
        switch result {
        case .success(let key):
            emit(.pairPaired(key: key.keyID, role: .init(key.role), code: key.comparisonCode,
                             lockFingerprint: key.lockFingerprint))
        case .failure(let why):
            emit(.pairFailed(reason: "\(why)"))
        }
        completion(result)
    }

    // MARK: CentralManagerDelegate

    public func centralManagerDidUpdateState(_ central: CentralManager) {
        if central.state == .poweredOn { proceed() }
    }

    public func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral,
                               advertisementData: AdvertisingData, rssi: Int8) {
        guard lock == nil, let data = advertisementData.manufacturerData,
              let beacon = PairingBeacon(manufacturerData: data) else { return }
        let lock = FoundLock(address: peripheral.identifier, name: PairingName.escaped(advertisementData.localName ?? ""),
                             fingerprint: beacon.fingerprintText)
        if found.updateValue(lock, forKey: lock.address) == nil {
            emit(.pairFound(lock: "\(lock.address)", name: lock.name, fingerprint: lock.fingerprint))
        }
    }

    public func centralManager(_ central: CentralManager, didStopScan reason: ScanStopReason) {
        guard completion != nil, lock == nil, case .scan(_, let pick) = target else { return }
        let candidates = found.values.sorted { $0.address.description < $1.address.description }
        guard !candidates.isEmpty else {
            finish(.failure(.notDelivered("no lock with an open pairing window answered the scan "
                                          + "(is `latchkey pair` running on the lock?)")))
            return
        }
        guard let chosen = pick(candidates), candidates.contains(chosen) else {
            finish(.failure(.notDelivered("no lock chosen")))
            return
        }
        choose(chosen.address, fingerprint: chosen.fingerprint)
        proceed()
    }

    public func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        emit(.pairLinked(lock: "\(peripheral.identifier)"))
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
        guard let initiator else { return }
        characteristic = c
        emit(.pairRequestSent(name: PairingName.escaped(initiator.name)))
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
        guard characteristic === self.characteristic, let initiator else { return }
        if let error { finish(.failure(.notDelivered("response read: \(error)"))); return }
        do throws(PairingFailure) {
            finish(.success(try initiator.complete(characteristic.value ?? [])))
        } catch {
            finish(.failure(error))
        }
    }

    private func emit(_ event: Event) {
        events.emit(AgentEvent(event, time: loop.now))
    }
}
