import LatchkeyConfig
import LatchkeyControl
import LatchkeyPosix
import LatchkeySettings
import LatchkeySimAir
import Logging

/// The bodies of the three long-running processes, shared by the `latchkey` CLI and the
/// programs that start agents as child processes of their own (`latchkey-torture`).
public enum AgentProcesses {
    /// `latchkey lock --config <path>`.
    public static func runLock(configPath: String, board: String? = nil, logger: Logger) throws(RuntimeError) {
        let settings: LockSettings
        do {
            let file: ConfigFile
            do { file = try loadConfig(configPath) } catch {
                // A wrong --board is the first thing to say, before a file that cannot be read.
                if let board { _ = try BoardCatalog.standard().load(board) }
                throw error
            }
            settings = try LockSettings.load(file, board: board)
        } catch { throw RuntimeError.configuration("\(error)") }
        try LockDaemon.run(settings, logger: logger)
    }

    /// `latchkey phone --config <path>`.
    public static func runPhone(configPath: String, logger: Logger) throws(RuntimeError) {
        let settings: PhoneSettings
        do { settings = try PhoneSettings.load(try loadConfig(configPath)) } catch {
            throw RuntimeError.configuration("\(error)")
        }
        try PhoneDaemon.run(settings, logger: logger)
    }

    /// `latchkey air`: the simulated radio, until SIGTERM or SIGINT.
    public static func runAir(socket: String, seed: UInt64, range: Double) throws {
        let loop = PosixEventLoop()
        let server = AirServer(socketPath: socket, loop: loop, seed: seed, range: range)
        server.log = { line in printLine("air: \(line)") }
        try server.start()
        printLine("air: listening on \(socket)")
        let stop = { server.stop(); loop.stop() }
        let term = try loop.onSignal(.terminate, stop)
        let int = try loop.onSignal(.interrupt, stop)
        try loop.run()
        withExtendedLifetime((term, int)) {}
    }

    /// Loads a configuration file; any problem reads file:line: field: message (exit status 78).
    public static func loadConfig(_ path: String) throws(RuntimeError) -> ConfigFile {
        do { return try ConfigFile.load(path) { try readTextFile($0) } } catch {
            throw RuntimeError.configuration("\(error)")
        }
    }
}
