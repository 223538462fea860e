import ArgumentParser
import Logging
import LatchkeyConfig
import LatchkeyPosix
import LatchkeyControl
import LatchkeyDaemons
import LatchkeySimAir

extension Latchkey {
    struct Lock: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock",
            abstract: "Run the lock agent: the Bluetooth LE peripheral that drives the lock hardware.",
            discussion: """
                Under systemd (systemd/latchkey-lock.service) it logs to the journal with priorities and fields \
                (`journalctl -u latchkey-lock -p warning`, `-o json`).

                Example: latchkey lock --config /etc/latchkey/lock.yaml --log-level debug
                """)

        @Option(name: .shortAndLong, help: "The lock's configuration file (YAML).")
        var config: String = "/etc/latchkey/lock.yaml"
        @Option(help: "A board definition (board/<name>.yaml: pi3b, pi4b, pi5, zero2w, sim); overrides the file's `board:`.")
        var board: String?
        @OptionGroup var logging: LoggingOptions

        func run() throws {
            try exitingWithStatus { () throws(RuntimeError) in
                try AgentProcesses.runLock(configPath: config, board: board, logger: logging.makeLogger("latchkey.lock"))
            }
        }
    }

    struct Phone: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "phone",
            abstract: "Run the phone agent: the central that keeps a never-timing-out connect request to its lock.",
            discussion: """
                Example: latchkey phone --config /etc/latchkey/phone.yaml
                """,
            subcommands: [Pair.self])

        @Option(name: .shortAndLong, help: "The phone's configuration file (YAML).")
        var config: String = "/etc/latchkey/phone.yaml"
        @OptionGroup var logging: LoggingOptions

        func run() throws {
            try exitingWithStatus { () throws(RuntimeError) in
                try AgentProcesses.runPhone(configPath: config, logger: logging.makeLogger("latchkey.phone"))
            }
        }
    }

    struct Air: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "air",
            abstract: "Run the simulated radio that lock and phone agents share (`transport: sim`).",
            discussion: """
                Example: latchkey air --socket /tmp/latchkey-air.sock --range 10
                """)

        @Option(help: "The Unix socket agents connect to.")
        var socket: String = AirServer.defaultSocketPath
        @Option(help: "Seed of the radio's deterministic randomness (advertising jitter, RSSI).")
        var seed: UInt64 = 1
        @Option(help: "Radio range in metres.")
        var range: Double = 10

        func run() throws {
            try AgentProcesses.runAir(socket: socket, seed: seed, range: range)
        }
    }
}

/// Runs an agent; a `RuntimeError` that carries its own exit status (78: configuration)
/// ends the process with it, after the message ArgumentParser would print ("Error: ...").
@discardableResult
func exitingWithStatus<T>(_ body: () throws(RuntimeError) -> T) throws -> T {
    do { return try body() } catch {
        guard error.exitStatus != ExitCode.failure.rawValue else { throw error }
        printErrorLine("Error: \(error)")
        throw ExitCode(error.exitStatus)
    }
}

/// `--log-level`: diagnostics on standard error through swift-log (`trace` adds a hex dump
/// of every ATT PDU). The timeline of events goes to standard output.
struct LoggingOptions: ParsableArguments {
    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of: \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    /// Under systemd (stderr is the journal's stream) each message is a journal entry with
    /// its priority and fields and no timestamp of ours (`JournaldLogHandler`); elsewhere a
    /// line on stderr.
    func makeLogger(_ label: String) -> Logger {
        if JournaldStream.isConnected() {
            let journal = JournaldSocket()
            LoggingSystem.bootstrap { JournaldLogHandler(label: $0, journal: journal) }
        } else {
            LoggingSystem.bootstrap(StreamLogHandler.standardError)
        }
        var logger = Logger(label: label)
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        return logger
    }
}
