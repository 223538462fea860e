import ArgumentParser
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyInspection
import LatchkeySecurity
import LatchkeyStore

extension Latchkey {
    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keys",
            abstract: "Manage the phone keys the lock accepts.",
            discussion: """
                Example: sudo -u latchkey latchkey keys list
                """,
            subcommands: [Add.self, List.self, Revoke.self])

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Create a key for a phone and write its secret to a file (mode 0600) for that phone.",
                discussion: """
                    Example: latchkey keys add --name alice-phone --export-secret /var/lib/latchkey/lock/alice.key
                    """)
            @Option(help: "The lock agent's state directory.") var stateDir: String = "/var/lib/latchkey/lock"
            @Option(help: "Key id (default: the next free one).") var id: UInt32?
            @Option(help: "A name for the phone.") var name: String
            @Option(help: "admin or user.") var role: String = "user"
            @Flag(help: "Let this phone ask for arrival unlocks (admin keys only; off by default).") var arrival = false
            @Flag(help: .hidden) var noArrivalUnlock = false  // the default now; kept so old scripts still run
            @Option(help: "Where to write the key's secret (64 hex digits).") var exportSecret: String

            func validate() throws {
                guard let keyRole = KeyRole(rawValue: role) else { throw ValidationError("--role must be admin or user") }
                if arrival && noArrivalUnlock { throw ValidationError("--arrival and --no-arrival-unlock contradict") }
                if let refusal = arrivalUnlockRefusal(role: keyRole, arrival: arrival) { throw ValidationError(refusal) }
                if let problem = PairingName.problem(name) { throw ValidationError("--name is refused: \(problem)") }
            }

            func run() throws {
                let keys = try StateStores.openKeys(stateDir)
                let keyID = try id ?? keys.nextID()
                let key = PhoneKey(id: keyID, name: name, secret: CommandSealing.newSecret(), role: KeyRole(rawValue: role)!,
                                   mayRequestArrivalUnlock: arrival)
                try KeyExport.add(key, to: keys, exportingSecretTo: exportSecret)
                try logKeyChange(.add, key: keyID, stateDir: stateDir)
                print("added key \(keyID) (\(PairingName.escaped(name)), \(role), arrival unlock \(arrival ? "on" : "off")); "
                      + "secret written to \(exportSecret)")
            }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List the keys (revoked ones too): id, name, role, state, arrival unlock, last counter, created.",
                discussion: """
                    Reads the store read-only; the lock agent may keep running.

                    Example: latchkey keys list -c /etc/latchkey/lock.yaml --json
                    """)
            @OptionGroup var state: InspectedStateOptions
            @Flag(help: "Print one JSON array, an object per key.") var json = false

            func run() throws {
                let keys = try state.open().keyList()
                if json { print(KeyListing.json(keys).rendered) } else { KeyListing.text(keys).forEach { print($0) } }
            }
        }

        struct Revoke: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "revoke",
                abstract: "Revoke a key; its next command fails, no restart needed.",
                discussion: "Example: sudo -u latchkey latchkey keys revoke 3")
            @Option(help: "The lock agent's state directory.") var stateDir: String = "/var/lib/latchkey/lock"
            @Argument(help: "The key id.") var id: UInt32
            func run() throws {
                try StateStores.openKeys(stateDir).revoke(id: id)
                try logKeyChange(.clear, key: id, stateDir: stateDir)
                print("revoked key \(id)")
            }
        }
    }

    struct PhoneCtl: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "phone-ctl",
            abstract: "Send a command to a running phone agent: status, lock, unlock, mode normal|no-remote|passage, "
                + "probe N, arriving, fetch-log [FROM [LIMIT]], suspend, resume, or execution foreground|background.",
            discussion: "Example: latchkey phone-ctl unlock")
        @Option(help: "The phone agent's state directory.") var stateDir: String = "/var/lib/latchkey/phone"
        @Argument(help: "The command and its arguments.") var words: [String]

        func run() throws { try sendControl(words, stateDir: stateDir) }
    }

    struct LockCtl: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock-ctl",
            abstract: "Send a command to a running lock agent: status, suspend, resume, execution foreground|background, "
                + "or fingerprint (pairing windows: `latchkey pair`).",
            discussion: "Example: sudo -u latchkey latchkey lock-ctl status")
        @Option(help: "The lock agent's state directory.") var stateDir: String = "/var/lib/latchkey/lock"
        @Argument(help: "The command and its arguments.") var words: [String]

        func run() throws { try sendControl(words, stateDir: stateDir) }
    }
}

/// One command to the agent whose state directory is `stateDir`; its replies on standard
/// output, exit status 1 when the last one is an error.
private func sendControl(_ words: [String], stateDir: String) throws {
    let ok = try LocalControlClient.send(words.joined(separator: " "), to: stateDir + "/control.sock") { print($0) }
    if !ok { throw ExitCode(1) }
}
