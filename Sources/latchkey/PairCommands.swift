import ArgumentParser
import LatchkeyConfig
import LatchkeyLock
import LatchkeyPosix
import LatchkeyRuntime
import LatchkeySecurity
import LatchkeyStore

extension Latchkey {
    /// `latchkey pair`, run on the lock's machine: the secure side of pairing.
    struct Pair: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pair",
            abstract: "Open a pairing window on the running lock agent: one phone may pair while it is open.",
            discussion: """
                Talks to the lock agent over its control socket in the state directory (only the service \
                user and root can reach it). Prints the lock's fingerprint, then the key that was added and \
                a six-digit code the phone shows too. On the phone, run `latchkey phone pair`.

                Example: sudo -u latchkey latchkey pair --window 120 --name alice-phone
                """)
        @Option(help: "The lock agent's state directory.") var stateDir: String = "/var/lib/latchkey/lock"
        @Option(help: "How long the window stays open, in seconds (1...600).") var window: Int = 60
        @Option(help: "The new key's role: admin or user.") var role: String = "user"
        @Flag(help: "Do not allow the new phone to ask for arrival unlocks.") var noArrivalUnlock = false
        @Option(help: "A name for the key (default: the name the phone proposes).") var name: String?

        func validate() throws {
            guard KeyRole(rawValue: role) != nil else { throw ValidationError("--role must be admin or user") }
            guard (1...600).contains(window) else { throw ValidationError("--window must be 1...600 seconds") }
        }

        func run() throws {
            var words = ["pair", "\(window)", role, noArrivalUnlock ? "no" : "yes"]
            if let name { words.append(name) }
            let ok = try LocalControlClient.send(words.joined(separator: " "), to: stateDir + "/control.sock") { print($0) }
            if !ok { throw ExitCode(1) }
        }
    }
}

extension Latchkey.Phone {
    /// `latchkey phone pair`: the phone's side, while a window is open on the lock.
    struct Pair: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pair",
            abstract: "Pair this phone with its lock while `latchkey pair` has a window open there.",
            discussion: """
                Stores the key in the phone's state directory (paired.key, mode 0600), where `latchkey phone` \
                finds it when the configuration names no key_id.

                Example: latchkey phone pair --config /etc/latchkey/phone.yaml --lock-fingerprint 3f9a…
                """)
        /// `latchkey phone --config FILE pair` and `latchkey phone pair --config FILE` both set
        /// the parent's option.
        @ParentCommand var phone: Latchkey.Phone
        @Option(help: "The name this phone proposes for its key.") var name: String = "phone"
        @Option(help: "Only accept a lock with this fingerprint (as `latchkey pair` prints it).")
        var lockFingerprint: String?
        @Option(help: "Give up after this many seconds.") var timeout: Int = 60

        func run() throws {
            let settings: PhoneSettings
            do { settings = try PhoneSettings.load(try AgentProcesses.loadConfig(phone.config)) } catch let e as ConfigError {
                throw RuntimeError("\(e)")
            }
            let (key, file) = try PhonePairingRun.run(settings, name: name, expectedFingerprint: lockFingerprint,
                                                     timeout: .seconds(max(1, timeout)))
            print("paired: key \(key.keyID), role \(key.role.rawValue), arrival unlock "
                  + "\(key.mayRequestArrivalUnlock ? "yes" : "no"); code \(key.comparisonCode); "
                  + "lock fingerprint \(key.lockFingerprint)")
            print("key written to \(file)")
            if settings.keyID != nil {
                print("note: \(phone.config) names key_id/key_secret_file; remove both to use the paired key")
            }
        }
    }
}

/// Appends a LockUserChange for a key managed from the command line, so that every key
/// added or revoked is in the lock's audit log (docs/LOCK-RULES.md rule 3).
func logKeyChange(_ change: DataOperationType, key: UInt32, stateDir: String) throws {
    let log = try StateStores.openEventLog(stateDir)
    let last = try log.tail(1).last?.event
    // CLOCK_MONOTONIC, the clock the lock agent's events carry too.
    let event = LockEvent(kind: .lockUserChange(KeyChangeRecord(change, source: .unspecified, key: KeyID(key))),
                          time: PosixEventLoop().now, lockStateBefore: last?.lockStateAfter ?? .unknown,
                          lockStateAfter: last?.lockStateAfter ?? .unknown, doorState: last?.doorState ?? .unknown)
    _ = try log.append(event)
}
