import ArgumentParser
import LatchkeyBridge
import LatchkeyConfig
import LatchkeyPosix
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyDoctor
import LatchkeySettings

extension Latchkey {
    struct Doctor: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "doctor",
            abstract: "Check this machine for the lock agent (or, with --phone, the phone agent): kernel Bluetooth, "
                + "adapters, bluetoothd, mgmt permission, the kernel's L2CAP crash after a lost link (a warning), "
                + "the board's GPIO chip and lines (lock) or CAP_NET_RAW (a warning) and the key (phone), "
                + "the state directory; with --mqtt, the bridge's broker and control sockets. "
                + "Exits non-zero when something blocks the agent (a FIX line).",
            discussion: """
                Examples:
                  latchkey doctor --config /etc/latchkey/lock.yaml
                  latchkey doctor --board pi4b --json
                  latchkey doctor --phone --config /etc/latchkey/phone.yaml
                  latchkey doctor --mqtt --config /etc/latchkey/mqtt.yaml
                """)

        @Flag(help: "Check for the phone agent instead of the lock agent.")
        var phone = false
        @Flag(help: ArgumentHelp("Check the MQTT bridge instead: one connection to the broker with mqtt.yaml's "
                                 + "credentials, and each agent's control socket."))
        var mqtt = false
        @Option(name: .shortAndLong, help: ArgumentHelp(
            "The agent's configuration file (YAML; default /etc/latchkey/lock.yaml, or phone.yaml with --phone, "
                + "mqtt.yaml with --mqtt); "
                + "for the lock, skipped when absent and --board is given."))
        var config: String?
        @Option(help: "A board definition to check (pi3b, pi4b, pi5, zero2w, sim); overrides the file's `board:`.")
        var board: String?
        @Flag(help: "Print one JSON object (agent, verdict, blocks, findings) whatever the verdict; the exit status is unchanged.")
        var json = false

        func validate() throws {
            if phone, board != nil { throw ValidationError("--board is for the lock; the phone agent drives no GPIO") }
            if mqtt, phone || board != nil { throw ValidationError("--mqtt checks the bridge alone: no --phone or --board") }
        }

        func run() throws {
            var findings: [DoctorFinding] = []
            if mqtt {
                findings = mqttFindings()
            } else {
                let doctor = phone ? phoneDoctor(&findings) : lockDoctor(&findings)
                findings += doctor.run()
            }
            if json {
                printLine(LatchkeyDoctor.Doctor.json(findings, agent: mqtt ? "mqtt" : phone ? "phone" : "lock").rendered)
            } else {
                for finding in findings { printLine("\(finding)") }
            }
            if LatchkeyDoctor.Doctor.blocks(findings) { throw ExitCode(1) }
        }

        func lockDoctor(_ findings: inout [DoctorFinding]) -> LatchkeyDoctor.Doctor {
            let settings = loadLockSettings(config ?? "/etc/latchkey/lock.yaml", &findings)
            var adapter = "hci0"
            if case .kernel(let a)? = settings?.transport { adapter = a }
            return LatchkeyDoctor.Doctor(
                probes: .system, wiring: settings?.wiring, statusLEDLine: settings?.board?.statusLEDLine,
                stateDirectory: settings?.stateDirectory ?? "/var/lib/latchkey/lock", adapter: adapter)
        }

        /// The bridge's configuration, then what it would meet (BridgeDoctor).
        func mqttFindings() -> [DoctorFinding] {
            let path = config ?? "/etc/latchkey/mqtt.yaml"
            do {
                let settings = try BridgeDaemon.settings(path)
                return [.ok("configuration: \(path)")] + BridgeDoctor.run(settings, on: PosixEventLoop())
            } catch {
                return [.fix("configuration: \(error)")]
            }
        }

        func phoneDoctor(_ findings: inout [DoctorFinding]) -> LatchkeyDoctor.Doctor {
            let path = config ?? "/etc/latchkey/phone.yaml"
            var settings: PhoneSettings?
            do {
                settings = try PhoneSettings.load(try ConfigFile.load(path) { try readTextFile($0) })
                findings.append(.ok("configuration: \(path)"))
            } catch {
                findings.append(.fix("configuration: \(error)"))
            }
            var adapter = "hci0"
            if case .kernel(let a)? = settings?.transport { adapter = a }
            let state = settings?.stateDirectory ?? "/var/lib/latchkey/phone"
            var doctor = LatchkeyDoctor.Doctor(probes: .system, wiring: nil, stateDirectory: state, adapter: adapter)
            doctor.agent = .phone(keyFile: settings?.keySecretFile ?? state + "/" + PairedKeyFile.fileName)
            return doctor
        }

        /// The configuration (with --board), or the board alone when there is no file.
        func loadLockSettings(_ config: String, _ findings: inout [DoctorFinding]) -> LockSettings? {
            let file: ConfigFile
            do {
                // With --board, a missing configuration file is expected: the board alone is checked.
                if let board, (try? readTextFile(config)) == nil {
                    file = try ConfigFile(path: "--board \(board)", text: "transport: kernel\n")
                } else {
                    file = try ConfigFile.load(config) { try readTextFile($0) }
                }
                let settings = try LockSettings.load(file, board: board)
                findings.append(.ok("configuration: \(file.path)" + (settings.board.map { ", board \($0.name)" } ?? "")))
                return settings
            } catch {
                findings.append(.fix("configuration: \(error)"))
                return nil
            }
        }
    }
}
