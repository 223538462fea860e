import ArgumentParser
import LatchkeyLock
import LatchkeyRuntime
import LatchkeySecurity
import LatchkeyStore

extension Latchkey {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show the lock's last known state and its most recent events, from its state directory.")

        @Option(help: "The lock agent's state directory.")
        var stateDir: String = "/var/lib/latchkey/lock"

        func run() throws {
            let log = try StateStores.openEventLog(stateDir)
            let recent = try log.tail(5)
            guard let last = recent.last else {
                print("no events yet in \(stateDir)")
                return
            }
            print("lock: \(last.event.lockStateAfter)  door: \(last.event.doorState)  (event #\(last.sequence))")
            print("recent events:")
            for e in recent { print("  " + LogLines.line(e)) }
        }
    }

    struct Log: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "log",
            abstract: "Print the lock's audit log (Matter-shaped events).")

        @Option(help: "The lock agent's state directory.")
        var stateDir: String = "/var/lib/latchkey/lock"
        @Option(help: "First sequence number to print.")
        var from: UInt64 = 0
        @Option(help: "Most events to print.")
        var limit: Int = 100

        func run() throws {
            let log = try StateStores.openEventLog(stateDir)
            for e in try log.read(from: from, limit: limit) { print(LogLines.line(e)) }
        }
    }

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keys",
            abstract: "Manage the phone keys the lock accepts.",
            subcommands: [Add.self, List.self, Revoke.self])

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Create a key for a phone and write its secret to a file (mode 0600) for that phone.")
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
            }

            func run() throws {
                let keys = try StateStores.openKeys(stateDir)
                let keyID = try id ?? keys.nextID()
                let key = PhoneKey(id: keyID, name: name, secret: CommandSealing.newSecret(), role: KeyRole(rawValue: role)!,
                                   mayRequestArrivalUnlock: arrival)
                try keys.add(key)
                try logKeyChange(.add, key: keyID, stateDir: stateDir)
                try writeSecretFile(exportSecret, key.secret)
                print("added key \(keyID) (\(name), \(role), arrival unlock \(arrival ? "on" : "off")); "
                      + "secret written to \(exportSecret)")
            }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List keys.")
            @Option(help: "The lock agent's state directory.") var stateDir: String = "/var/lib/latchkey/lock"
            func run() throws {
                for k in try StateStores.openKeys(stateDir).list() {
                    let state = k.key.revoked ? "revoked" : "active"
                    print("\(k.key.id)\t\(k.key.name)\t\(k.key.role.rawValue)\t\(state)\tarrival=\(k.key.mayRequestArrivalUnlock ? "on" : "off")\tcounter=\(k.lastCounter)")
                }
            }
        }

        struct Revoke: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "revoke",
                abstract: "Revoke a key; its next command fails, no restart needed.")
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
                + "probe N, suspend, resume, or execution foreground|background.")
        @Option(help: "The phone agent's state directory.") var stateDir: String = "/var/lib/latchkey/phone"
        @Argument(help: "The command and its arguments.") var words: [String]

        func run() throws { try sendControl(words, stateDir: stateDir) }
    }

    struct LockCtl: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock-ctl",
            abstract: "Send a command to a running lock agent: status, suspend, resume, execution foreground|background, "
                + "or fingerprint (pairing windows: `latchkey pair`).")
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
