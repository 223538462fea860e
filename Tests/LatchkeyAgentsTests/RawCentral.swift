import LatchkeyCentral
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyTransport

/// A central that is not a Latchkey phone: an attacker who knows the protocol but not the
/// key, or a relay. It links, discovers the lock service, and writes whatever frames it is
/// given to the control characteristic, each after reading a fresh challenge.
final class RawCentral: CentralManagerDelegate, PeripheralDelegate {
    let central: CentralManager
    let lock: Peripheral
    private var control: RemoteCharacteristic?
    private var challenge: RemoteCharacteristic?
    private(set) var state: RemoteCharacteristic?
    private(set) var transfer: RemoteCharacteristic?
    private(set) var pairing: RemoteCharacteristic?
    /// What reads of the lock state returned: the value, or the error.
    private(set) var stateReads: [Result<[UInt8], BluetoothError>] = []
    /// Values notified to us, on any characteristic.
    private(set) var notified: [[UInt8]] = []
    /// Answers to subscriptions and to log requests: nil when accepted.
    private(set) var subscriptions: [BluetoothError?] = []
    private(set) var logRequests: [BluetoothError?] = []
    private var reading = false
    private var queue: [([UInt8]) -> [UInt8]] = []
    private var inFlight: (([UInt8]) -> [UInt8])?
    /// One entry per write: nil when accepted, else the lock's rejection.
    private(set) var results: [CommandRejection?] = []
    private(set) var links = 0
    var isReady: Bool { control != nil && challenge != nil && lock.state == .connected }

    init(transport: any BluetoothTransport, lockAddress: BluetoothAddress) {
        central = CentralManager(transport: transport)
        lock = central.retrievePeripherals(withIdentifiers: [lockAddress])[0]
        central.delegate = self
        lock.delegate = self
    }

    private var wantsLink = false

    func connect() {
        wantsLink = true
        if central.state == .poweredOn { try? central.connect(lock) }
    }

    func disconnect() {
        wantsLink = false
        control = nil; challenge = nil
        central.cancelPeripheralConnection(lock)
    }

    func centralManagerDidUpdateState(_ central: CentralManager) {
        if central.state == .poweredOn && wantsLink { try? central.connect(lock) }
    }

    /// Reads a challenge, then writes `frame(challenge)`; the outcome lands in `results`.
    func send(_ frame: @escaping (_ challenge: [UInt8]) -> [UInt8]) {
        queue.append(frame)
        pump()
    }

    private func pump() {
        guard isReady, inFlight == nil, !queue.isEmpty, let challenge else { return }
        inFlight = queue.removeFirst()
        lock.readValue(for: challenge)
    }

    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        links += 1
        peripheral.discoverServices([LockServiceUUID.service])
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: BluetoothError?) {
        guard let s = peripheral.service(LockServiceUUID.service) else { return }
        peripheral.discoverCharacteristics(nil, for: s)
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: RemoteService,
                    error: BluetoothError?) {
        control = service.characteristic(LockServiceUUID.lockControl)
        challenge = service.characteristic(LockServiceUUID.challenge)
        state = service.characteristic(LockServiceUUID.lockState)
        transfer = service.characteristic(LockServiceUUID.dataTransfer)
        pairing = service.characteristic(LockServiceUUID.pairing)
        pump()
    }

    /// A pairing request written as a phone would, after which this central just stays linked
    /// (what the winner of a pairing race whose key the owner refused would do).
    func writePairing(_ bytes: [UInt8]) {
        if let pairing { lock.writeValue(bytes, for: pairing, withResponse: true) }
    }

    /// What a nosy stranger tries: read the lock state, subscribe to it and to the log,
    /// and ask for the log.
    func readState() {
        guard let state else { return }
        reading = true
        lock.readValue(for: state)
    }

    func subscribe() {
        if let state { lock.setNotifyValue(true, for: state) }
        if let transfer { lock.setNotifyValue(true, for: transfer) }
    }

    func requestLog() {
        if let transfer { lock.writeValue(LogRequest(fromSequence: 1).bytes, for: transfer, withResponse: true) }
    }

    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: RemoteCharacteristic,
                    error: BluetoothError?) {
        subscriptions.append(error)
    }

    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic,
                    error: BluetoothError?) {
        if characteristic === state || characteristic === transfer {
            if characteristic === state && reading {
                reading = false
                stateReads.append(error.map { .failure($0) } ?? .success(characteristic.value ?? []))
            } else if error == nil, let v = characteristic.value {
                notified.append(v)
            }
            return
        }
        guard characteristic === challenge, let make = inFlight, let control,
              let grant = try? ChallengeGrant(decoding: characteristic.value ?? []) else { return }
        peripheral.writeValue(make(grant.challenge), for: control, withResponse: true)
    }

    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic,
                    error: BluetoothError?) {
        if characteristic === transfer { logRequests.append(error); return }
        guard characteristic === control, inFlight != nil else { return }
        inFlight = nil
        switch error {
        case nil: results.append(nil)
        case .att(let code)?: results.append(CommandRejection(code) ?? .malformed)
        case _?: results.append(.malformed)
        }
        pump()
    }
}
