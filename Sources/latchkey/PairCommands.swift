import ArgumentParser
import LatchkeyConfig
import LatchkeyAgents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyPhoneAgent
import LatchkeyPosix
import LatchkeyControl
import LatchkeyDaemons
import LatchkeySecurity
import LatchkeySettings
import LatchkeyStore

extension Latchkey {
    /// `latchkey pair`, run on the lock's machine: the secure side of pairing.
    struct Pair: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pair",
            abstract: "Open a pairing window on the running lock agent: one phone may pair while it is open.",
            discussion: """
                Talks to the lock agent over its control socket in the state directory (only the service \
                user and root can reach it). Prints the lock's fingerprint (give it to `latchkey phone pair \
                --lock-fingerprint`, or compare it with the one the phone lists). When a phone asks, prints \
                its six-digit code and asks whether the phone shows the same: only a "y" enrols the key; \
                anything else, or no answer within 120 s, closes the window and enrols nothing. Without a \
                terminal, answer from another shell with `latchkey pair --confirm CODE` (the code the \
                phone shows) or `latchkey pair --reject`.

                Example: sudo -u latchkey latchkey pair --window 120 --name alice-phone
                """)
        @Option(help: "The lock agent's state directory.") var stateDir: String = "/var/lib/latchkey/lock"
        @Option(help: "How long the window stays open, in seconds (1...600).") var window: Int = 60
        @Option(help: "The new key's role: admin or user.") var role: String = "user"
        @Flag(help: "Let the new phone ask for arrival unlocks (admin keys only; off by default).") var arrival = false
        @Flag(help: .hidden) var noArrivalUnlock = false  // the default now; kept so old scripts still run
        @Option(help: "A name for the key (default: the name the phone proposes).") var name: String?
        @Option(help: "Answer a pending pairing: the six-digit code the phone shows (opens no window).")
        var confirm: String?
        @Flag(help: "Answer a pending pairing: the codes differ (opens no window).") var reject = false

        func validate() throws {
            guard let keyRole = KeyRole(rawValue: role) else { throw ValidationError("--role must be admin or user") }
            guard (1...600).contains(window) else { throw ValidationError("--window must be 1...600 seconds") }
            if arrival && noArrivalUnlock { throw ValidationError("--arrival and --no-arrival-unlock contradict") }
            if let refusal = arrivalUnlockRefusal(role: keyRole, arrival: arrival) { throw ValidationError(refusal) }
            guard confirm == nil || !reject else { throw ValidationError("--confirm and --reject exclude each other") }
            if let confirm, confirm.count != 6 || !confirm.allSatisfy(\.isASCII) || !confirm.allSatisfy(\.isNumber) {
                throw ValidationError("--confirm takes the six digits the phone shows")
            }
            if let name, let problem = PairingName.problem(name) { throw ValidationError("--name is refused: \(problem)") }
        }

        func run() throws {
            let socket = stateDir + "/control.sock"
            if confirm != nil || reject {
                let ok = try LocalControlClient.send(confirm.map { "pair-confirm \($0)" } ?? "pair-reject", to: socket) {
                    Terminal.printFlushed($0)
                }
                if !ok { throw ExitCode(1) }
                return
            }
            var words = ["pair", "\(window)", role, arrival ? "yes" : "no"]
            if let name { words.append(name) }
            let interactive = Terminal.standardInputIsInteractive
            let ok = try LocalControlClient.send(words.joined(separator: " "), to: socket, print: { Terminal.printFlushed($0) },
                                                 answer: { line in ownerAnswer(line, interactive: interactive) })
            if !ok { throw ExitCode(1) }
        }

        /// The owner's answer to a "confirm key=N name=... code=C" line: "y" confirms that code.
        private func ownerAnswer(_ line: String, interactive: Bool) -> String? {
            guard line.hasPrefix("confirm "),
                  let code = line.split(separator: " ").first(where: { $0.hasPrefix("code=") })?.dropFirst(5) else {
                return nil
            }
            guard interactive else {
                Terminal.printFlushed("compare with the phone's code, then answer from another shell: "
                                      + "`latchkey pair --confirm <the phone's code>` or `latchkey pair --reject`")
                return nil
            }
            print("Does the phone show \(code)? Only then type y to enrol it [y/N]: ", terminator: "")
            let answer = readLine()?.lowercased()
            return answer == "y" || answer == "yes" ? "pair-confirm \(code)" : "pair-reject"
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
                Without lock_address in the configuration (or without --lock-fingerprint), scans for locks \
                whose pairing window is open and lists each with its fingerprint: choose the one whose \
                fingerprint `latchkey pair` printed on the lock. Stores the key and the lock's address in the \
                phone's state directory (paired.key, mode 0600), where `latchkey phone` finds them when the \
                configuration names no key_id. Then confirm the code it prints on the lock's side.

                Example: latchkey phone pair --config /etc/latchkey/phone.yaml --lock-fingerprint 3f9a…
                """)
        /// `latchkey phone --config FILE pair` and `latchkey phone pair --config FILE` both set
        /// the parent's option.
        @ParentCommand var phone: Latchkey.Phone
        @Option(help: "The name this phone proposes for its key.") var name: String = "phone"
        @Option(help: "The lock's fingerprint as `latchkey pair` prints it (32 hex digits); pins that lock.")
        var lockFingerprint: String?
        @Option(help: "Give up after this many seconds.") var timeout: Int = 60
        @Option(help: "How long to scan for locks with an open window, in seconds.") var scan: Int = 5

        func validate() throws {
            if let f = lockFingerprint, PairingKeyAgreement.normalizedFingerprint(f) == nil {
                throw ValidationError("--lock-fingerprint takes the 32 hex digits (128 bits) `latchkey pair` prints")
            }
            if let problem = PairingName.problem(name) { throw ValidationError("--name is refused: \(problem)") }
            guard (1...60).contains(scan) else { throw ValidationError("--scan must be 1...60 seconds") }
        }

        func run() throws {
            let settings: PhoneSettings
            do { settings = try PhoneSettings.load(try AgentProcesses.loadConfig(phone.config)) } catch let e as ConfigError {
                throw RuntimeError("\(e)")
            }
            guard lockFingerprint != nil || Terminal.standardInputIsInteractive else {
                throw RuntimeError("without a terminal to confirm the lock's fingerprint on, give --lock-fingerprint")
            }
            let choice = PhonePairingRun.Choice(fingerprint: lockFingerprint, scan: .seconds(scan), ask: Self.ask)
            let (key, lock, file) = try PhonePairingRun.run(settings, name: name, choice: choice,
                                                            timeout: .seconds(max(1, timeout)))
            print("paired with \(lock): key \(key.keyID), role \(key.role.rawValue), arrival unlock "
                  + "\(key.mayRequestArrivalUnlock ? "yes" : "no"); lock fingerprint \(key.lockFingerprint)")
            print("code \(key.comparisonCode): the lock enrols this key once its owner confirms this code there")
            print("key written to \(file)")
            if settings.keyID != nil {
                print("note: \(phone.config) names key_id/key_secret_file; remove both to use the paired key")
            }
        }

        /// Lists the locks found; the user picks one by number and confirms its fingerprint.
        static func ask(_ found: [FoundLock]) -> FoundLock? {
            print("locks with an open pairing window:")
            for (i, lock) in found.enumerated() {
                print("  \(i + 1). \(lock.name.isEmpty ? "(no name)" : lock.name)  \(lock.address)  "
                      + "fingerprint \(lock.fingerprint)")
            }
            print("number of the lock to pair with (empty: none): ", terminator: "")
            guard let line = readLine(), let n = Int(line), found.indices.contains(n - 1) else { return nil }
            let lock = found[n - 1]
            print("Does `latchkey pair` on the lock print fingerprint \(lock.fingerprint)? [y/N]: ", terminator: "")
            return readLine()?.lowercased().hasPrefix("y") == true ? lock : nil
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
