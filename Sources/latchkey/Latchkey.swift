import ArgumentParser
import LatchkeyBuildInfo
import LatchkeyConfig
import LatchkeyDaemons
import LatchkeyDemo
import LatchkeyDoctor

// Every command names itself (`commandName:`): otherwise ArgumentParser derives each name with
// `String(describing: Self.self)`, whose dynamic casts scan all the protocol conformances in
// the binary, for every command at every start — a third of an agent's start-up CPU (perf).
@main
struct Latchkey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "A Bluetooth LE smart lock for Pi-class Linux, and the phone agent that opens it when you come home.",
        discussion: """
            Example: latchkey doctor --config /etc/latchkey/lock.yaml && latchkey lock --config /etc/latchkey/lock.yaml

            Run `latchkey help COMMAND` for a command's options and examples.
            """,
        // `latchkey --version`: the release and the commit this binary was built from.
        version: BuildInfo.versionLine,
        // `--help` in the order a new user needs them: what runs, how phones get in, how to
        // look, and the simulated world for trying it without hardware.
        groupedSubcommands: [
            CommandGroup(name: "Agents", subcommands: [Lock.self, Phone.self, LockCtl.self, PhoneCtl.self, GaveUp.self]),
            CommandGroup(name: "Keys and pairing", subcommands: [Keys.self, Pair.self]),
            CommandGroup(name: "Inspection", subcommands: [Status.self, Log.self, Doctor.self, Events.self]),
            CommandGroup(name: "Home automation", subcommands: [MQTT.self]),
            CommandGroup(name: "Simulation", subcommands: [Demo.self, Air.self, GPIOSim.self]),
        ])
}

extension Latchkey {
    /// ArgumentParser's entry point, except that an error ending the process goes through
    /// `printErrorLine`: under systemd it reaches the journal at priority err.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { printLine(message) }  // --help, --version
            } else if !message.isEmpty {
                printErrorLine(message)
            }
            exit(withError: ExitCode(code.rawValue))
        }
    }
}

