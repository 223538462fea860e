import ArgumentParser
import LatchkeyConfig
import LatchkeyRuntime

extension Latchkey {
    struct Doctor: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "doctor",
            abstract: "Check this machine for the lock agent: kernel Bluetooth, adapters, bluetoothd, mgmt permission, "
                + "the board's GPIO chip and lines, the state directory. Exits non-zero when something blocks the agent.")

        @Option(name: .shortAndLong, help: "The lock's configuration file (YAML); skipped when absent and --board is given.")
        var config: String = "/etc/latchkey/lock.yaml"
        @Option(help: "A board definition to check (pi3b, pi4b, pi5, zero2w, sim); overrides the file's `board:`.")
        var board: String?

        func run() throws {
            var findings: [DoctorFinding] = []
            let settings = loadSettings(&findings)
            var adapter = "hci0"
            if case .kernel(let a)? = settings?.transport { adapter = a }
            let doctor = LatchkeyRuntime.Doctor(
                probes: .system, wiring: settings?.wiring, statusLEDLine: settings?.board?.statusLEDLine,
                stateDirectory: settings?.stateDirectory ?? "/var/lib/latchkey/lock", adapter: adapter)
            findings += doctor.run()
            for finding in findings { printLine("\(finding)") }
            if LatchkeyRuntime.Doctor.blocks(findings) { throw ExitCode(1) }
        }

        /// The configuration (with --board), or the board alone when there is no file.
        func loadSettings(_ findings: inout [DoctorFinding]) -> LockSettings? {
            let file: ConfigFile
            do {
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
