#if canImport(Glibc)
import Glibc
#endif
import LatchkeyDaemons
import LatchkeyTorture
import Logging

// latchkey-torture --kills N [--seed S] [--verbose] [--trace] [--log-rows R]
// latchkey-torture --self-test
//
// Kills the lock and phone agents at random moments N times on the simulated air (`Torture`);
// its last line reads "kills: N, lost decisions: X, unintended unlocks: Y, relink failures: Z"
// and it exits non-zero unless X, Y and Z are 0. `--self-test` shows the audit catching each
// fault it exists for (`TortureSelfTest`). Its agents are copies of itself (`AgentProcesses`).
// docs/TESTING.md, "Torture".

func usage() -> Never {
    printLine("usage: latchkey-torture --kills N [--seed S] [--verbose] [--trace] [--log-rows R]")
    printLine("       latchkey-torture --self-test")
    exit(2)
}

func value(after flag: String, in arguments: [String]) -> String? {
    guard let i = arguments.firstIndex(of: flag), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "air":
        try AgentProcesses.runAir(socket: value(after: "--socket", in: arguments) ?? "/tmp/latchkey-air.sock",
                                  seed: value(after: "--seed", in: arguments).flatMap(UInt64.init) ?? 1, range: 10)
    case "lock", "phone":
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var logger = Logger(label: "latchkey-torture.\(arguments[0])")
        logger.logLevel = .warning
        guard let config = value(after: "--config", in: arguments) else { usage() }
        if arguments[0] == "lock" {
            try AgentProcesses.runLock(configPath: config, logger: logger)
        } else {
            try AgentProcesses.runPhone(configPath: config, logger: logger)
        }
    case "--self-test":
        let passed = TortureSelfTest.run { printLine($0) }
        printLine(passed ? "self-test: the audit reports every injected fault" : "self-test: FAILED")
        exit(passed ? 0 : 1)
    default:
        guard let kills = value(after: "--kills", in: arguments).flatMap(Int.init), kills > 0 else { usage() }
        var options = Torture.Options(kills: kills)
        if let seed = value(after: "--seed", in: arguments).flatMap(UInt64.init) { options.seed = seed }
        if let rows = value(after: "--log-rows", in: arguments).flatMap(Int.init) { options.logRows = rows }
        options.verbose = arguments.contains("--verbose")
        options.trace = arguments.contains("--trace")
        let result = Torture.run(options) { printLine($0) }
        printLine(result.line)
        exit(result.passed ? 0 : 1)
    }
} catch {
    printLine("error: \(error)")
    exit(1)
}
