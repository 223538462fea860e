import LatchkeyAgents
import LatchkeyPosix
import LatchkeySecurity
import Logging

/// `latchkey phone pair`: pairs this phone with its lock while a window is open there
/// (`latchkey pair --window N` on the lock), and stores the key in the phone's state
/// directory for `latchkey phone` to use.
public enum PhonePairingRun {
    /// Returns the key and the file it was written to.
    public static func run(_ settings: PhoneSettings, name: String, expectedFingerprint: String?,
                           timeout: Duration) throws(RuntimeError) -> (key: PairedKey, file: String) {
        // Opening the phone's store creates the state directory with mode 0700, or refuses one
        // that others can read.
        _ = try StateStores.openPhone(settings.stateDirectory)
        let loop = PosixEventLoop()
        let printer = EventPrinter(format: settings.eventFormat)
        let transport = try openTransport(settings.transport, loop: loop, role: "phone",
                                          logger: Logger(label: "latchkey.phone.pair"))
        let pairing = PhonePairing(transport: transport, lockAddress: settings.lockAddress,
                                   initiator: PairingInitiator(name: name, expectedFingerprint: expectedFingerprint),
                                   events: printer, timeout: timeout)
        var result: Result<PairedKey, PairingFailure>?
        pairing.start { result = $0 }
        do { _ = try loop.run(until: { result != nil }, timeout: timeout + .seconds(1)) } catch {
            throw RuntimeError("event loop: \(error)")
        }
        withExtendedLifetime((pairing, transport)) {}
        switch result {
        case .success(let key)?:
            // A config that names its own key file keeps it; the paired key goes beside it.
            let file = settings.keyID == nil ? settings.keySecretFile
                : settings.stateDirectory + "/" + PairedKeyFile.fileName
            try PairedKeyFile.write(key, to: file)
            return (key, file)
        case .failure(let why)?:
            throw RuntimeError("pairing failed: \(why)")
        case nil:
            throw RuntimeError("pairing failed: no answer within \(timeout)")
        }
    }
}
