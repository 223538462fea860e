import LatchkeyAgents
import LatchkeyControl
import LatchkeyPhoneAgent
import LatchkeyPosix
import LatchkeySecurity
import LatchkeySettings
import LatchkeyTransport
import Logging

/// `latchkey phone pair`: pairs this phone with its lock while a window is open there
/// (`latchkey pair --window N` on the lock), and stores the key, and the lock's address, in
/// the phone's state directory for `latchkey phone` to use.
public enum PhonePairingRun {
    /// How the lock is picked.
    public struct Choice {
        /// The fingerprint the owner read on the lock (`--lock-fingerprint`); nil: chosen from
        /// the scan's list by `ask`.
        public var fingerprint: String?
        /// Shown the locks the scan found; returns the one the user chose and whose
        /// fingerprint they confirmed, or nil. Used only without `fingerprint`.
        public var ask: ([FoundLock]) -> FoundLock?
        public var scan: Duration
        public init(fingerprint: String?, scan: Duration = PhonePairing.defaultScan,
                    ask: @escaping ([FoundLock]) -> FoundLock? = { _ in nil }) {
            self.fingerprint = fingerprint; self.scan = scan; self.ask = ask
        }
    }

    /// The target: the configured address with the given fingerprint, else a scan for locks
    /// with an open window — the one with the given fingerprint (at the configured address,
    /// if any), or the one the user chose.
    static func target(_ settings: PhoneSettings, _ choice: Choice) -> PairingTarget {
        if let address = settings.lockAddress, let fingerprint = choice.fingerprint {
            return .address(address, fingerprint: fingerprint)
        }
        return .scan(duration: choice.scan) { found in
            let here = found.filter { settings.lockAddress == nil || $0.address == settings.lockAddress }
            guard let fingerprint = choice.fingerprint else { return choice.ask(here) }
            let wanted = PairingKeyAgreement.normalizedFingerprint(fingerprint)
            return here.first { $0.fingerprint == wanted }
        }
    }

    /// Returns the key, the lock's address and the file they were written to.
    public static func run(_ settings: PhoneSettings, name: String, choice: Choice,
                           timeout: Duration) throws(RuntimeError) -> (key: PairedKey, lock: BluetoothAddress, file: String) {
        // Opening the phone's store creates the state directory with mode 0700, or refuses one
        // that others can read.
        _ = try StateStores.openPhone(settings.stateDirectory)
        let loop = PosixEventLoop()
        let printer = EventPrinter(format: settings.eventFormat)
        let transport = try openTransport(settings.transport, loop: loop, role: "phone",
                                          logger: Logger(label: "latchkey.phone.pair"))
        let pairing = PhonePairing(transport: transport, target: target(settings, choice), name: name,
                                   events: printer, timeout: timeout)
        var result: Result<PairedKey, PairingFailure>?
        pairing.start { result = $0 }
        do { _ = try loop.run(until: { result != nil }, timeout: timeout + .seconds(1)) } catch {
            throw RuntimeError("event loop: \(error)")
        }
        withExtendedLifetime((pairing, transport)) {}
        switch result {
        case .success(let key)?:
            guard let lock = pairing.lockAddress else { throw RuntimeError("pairing failed: no lock address") }
            // A config that names its own key file keeps it; the paired key goes beside it.
            let file = settings.keyID == nil ? settings.keySecretFile
                : settings.stateDirectory + "/" + PairedKeyFile.fileName
            try PairedKeyFile.write(key, lockAddress: lock, to: file)
            return (key, lock, file)
        case .failure(let why)?:
            throw RuntimeError("pairing failed: \(why)")
        case nil:
            throw RuntimeError("pairing failed: no answer within \(timeout)")
        }
    }
}
