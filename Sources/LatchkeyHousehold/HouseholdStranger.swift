import LatchkeyCentral
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport

/// A stranger's radio in range of the door: a central with no key that knows the protocol.
/// It links, discovers the lock service, and writes each frame it is given to the control
/// characteristic after reading a fresh challenge: forged commands naming the owner's key,
/// junk, and replays of the control writes it overheard between the owner's phone and the
/// lock; and well-formed pairing requests to the pairing characteristic, with no window open.
/// Every write's answer is kept: the judge fails the run for any one accepted.
final class HouseholdStranger: CentralManagerDelegate, PeripheralDelegate {
    let central: CentralManager
    let lock: Peripheral
    private var control: RemoteCharacteristic?
    private var challenge: RemoteCharacteristic?
    private var pairing: RemoteCharacteristic?
    private var queue: [(what: String, frame: ([UInt8]) -> [UInt8])] = []
    private var inFlight: (what: String, frame: ([UInt8]) -> [UInt8])?
    /// What a pairing request is called in the answers (`sendPairing`).
    static let pairingRequest = "pairing request"
    private var wantsLink = false
    /// Called with each write's answer (true when the lock accepted it) and what it was.
    let answered: (Bool, String) -> Void
    private(set) var links = 0

    init(transport: any BluetoothTransport, lockAddress: BluetoothAddress, answered: @escaping (Bool, String) -> Void) {
        central = CentralManager(transport: transport)
        lock = central.retrievePeripherals(withIdentifiers: [lockAddress])[0]
        self.answered = answered
        central.delegate = self
        lock.delegate = self
    }

    var isReady: Bool { control != nil && challenge != nil && lock.state == .connected }

    func connect() {
        wantsLink = true
        // A stranger's connect that fails is a stranger kept out; each try is counted as a link.
        if central.state == .poweredOn { try? central.connect(lock) }
    }

    func leave() {
        wantsLink = false
        queue = []
        inFlight = nil
        control = nil; challenge = nil; pairing = nil
        central.cancelPeripheralConnection(lock)
    }

    /// Reads a challenge, then writes `frame(challenge)`; `what` names it in the report.
    func send(_ what: String, _ frame: @escaping (_ challenge: [UInt8]) -> [UInt8]) {
        queue.append((what, frame))
        pump()
    }

    /// Writes `request` to the pairing characteristic, no challenge first (pairing needs none).
    func sendPairing(_ request: [UInt8]) {
        queue.append((Self.pairingRequest, { _ in request }))
        pump()
    }

    private func pump() {
        guard isReady, inFlight == nil, !queue.isEmpty, let challenge else { return }
        let next = queue.removeFirst()
        inFlight = next
        if next.what == Self.pairingRequest {
            // A lock with no pairing characteristic refuses the request by having none.
            guard let pairing else { inFlight = nil; answered(false, next.what); return pump() }
            lock.writeValue(next.frame([]), for: pairing, withResponse: true)
        } else {
            lock.readValue(for: challenge)
        }
    }

    func centralManagerDidUpdateState(_ central: CentralManager) {
        if central.state == .poweredOn && wantsLink { try? central.connect(lock) }
    }

    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        links += 1
        peripheral.discoverServices([LockServiceUUID.service])
    }

    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: BluetoothError?) {
        // Dropped by the lock (an unauthenticated link's limit): link again while still here.
        control = nil; challenge = nil; pairing = nil
        inFlight = nil
        if wantsLink { try? central.connect(lock) }
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: BluetoothError?) {
        guard let s = peripheral.service(LockServiceUUID.service) else { return }
        peripheral.discoverCharacteristics(nil, for: s)
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: RemoteService, error: BluetoothError?) {
        control = service.characteristic(LockServiceUUID.lockControl)
        challenge = service.characteristic(LockServiceUUID.challenge)
        pairing = service.characteristic(LockServiceUUID.pairing)
        pump()
    }

    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic, error: BluetoothError?) {
        guard characteristic === challenge, let make = inFlight, let control,
              let grant = try? ChallengeGrant(decoding: characteristic.value ?? []) else { return }  // no grant: nothing to forge on
        peripheral.writeValue(make.frame(grant.challenge), for: control, withResponse: true)
    }

    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic, error: BluetoothError?) {
        guard characteristic === control || characteristic === pairing, let written = inFlight else { return }
        inFlight = nil
        answered(error == nil, written.what)
        pump()
    }

    /// A command sealed with a secret that is not the key's (drawn from the seed), naming `key`;
    /// its nonce from `random`.
    static func forged(key: UInt32, secret: [UInt8], counter: UInt64, random: RandomSource) -> ([UInt8]) -> [UInt8] {
        { challenge in
            // Sealing fails only for a malformed challenge; empty bytes are junk the lock refuses too.
            (try? CommandSealing.seal(CommandBody(operation: .unlock, commandID: counter),
                                      keyID: key, secret: secret, counter: counter, challenge: challenge,
                                      random: random).bytes) ?? []
        }
    }

    /// A well-formed pairing request, as `latchkey phone pair` writes one (its key and nonce
    /// from `random`); nil only if the name were refused.
    static func pairingRequest(random: RandomSource) -> [UInt8]? {
        // Any fingerprint of the right form: the lock never sees it (the phone pins it).
        (try? PairingInitiator(name: "stranger", expectedFingerprint: String(repeating: "0", count: 32),
                               random: random))?.request.bytes
    }

    /// The values of the ATT Write Requests (opcode 0x12: handle, then value) the owner's
    /// phone sent the lock, as a sniffer beside the door hears them.
    static func writeValue(ofPDU pdu: [UInt8]) -> [UInt8]? {
        guard pdu.count > 3, pdu[0] == 0x12 else { return nil }
        return Array(pdu[3...])
    }
}
