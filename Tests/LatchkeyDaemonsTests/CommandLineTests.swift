#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
@testable import LatchkeyDaemons
@testable import LatchkeyDemo
import Testing

/// The built `latchkey` binary as a person or a script meets it: read-only
/// commands on a mistyped directory, `--help` in groups, an example in every command's help,
/// `doctor --json` as one document.
@Suite struct CommandLineTests {
    /// Runs the binary; its exit status and every line of stdout and stderr.
    static func run(_ arguments: [String]) throws -> (status: Int32, lines: [String]) {
        let binary = try #require(ExitStatusTests.latchkeyBinary(), "the latchkey executable is built next to the tests")
        let loop = PosixEventLoop()
        let child = try ChildProcess(name: "latchkey", executable: binary, arguments: arguments, loop: loop)
        var lines: [String] = []
        child.onLine = { lines.append($0) }
        #expect(try loop.run(until: { child.outputEnded }, timeout: .seconds(30)))
        let status = child.waitForExit()
        #expect(status & 0x7f == 0, "exited, not killed")
        return ((status >> 8) & 0xff, lines)
    }

    @Test(arguments: [["status"], ["log"], ["keys", "list"], ["log", "--json"], ["status", "--json"]])
    func aMistypedStateDirectoryIsOneSentenceAndIsNotCreated(_ command: [String]) throws {
        let dir = try RuntimeDirectory.makeTemporary(prefix: "latchkey-cli")
        defer { RuntimeDirectory.remove(dir) }
        let typo = dir + "/lokc"
        let (status, lines) = try Self.run(command + ["--state-dir", typo])
        #expect(status == 1)
        #expect(lines == ["Error: \(typo) is not a lock agent's state directory: no such directory"])
        #expect(access(typo, F_OK) != 0, "the directory was not created")
    }

    /// A phone's state directory (phone.db, no lock.db) handed to a lock command.
    @Test func aForeignStateDirectoryIsOneSentenceAndGetsNoFile() throws {
        let dir = try RuntimeDirectory.makeTemporary(prefix: "latchkey-cli")
        defer { RuntimeDirectory.remove(dir) }
        _ = try StateStores.openPhone(dir)
        let (status, lines) = try Self.run(["status", "--state-dir", dir])
        #expect(status == 1)
        #expect(lines.count == 1 && lines[0].hasPrefix("Error: \(dir) holds no lock store (lock.db)"), "\(lines)")
        #expect(access(dir + "/lock.db", F_OK) != 0, "no lock.db was created")
    }

    /// `-c`: the configuration's state_directory, as `latchkey lock -c` reads it.
    @Test func theConfigurationNamesTheStateDirectory() throws {
        let dir = try RuntimeDirectory.makeTemporary(prefix: "latchkey-cli")
        defer { RuntimeDirectory.remove(dir) }
        let state = dir + "/state"
        _ = try LockInspectionTests.lockStore(state)
        try writeFile(dir + "/lock.yaml", "transport: sim\nsim:\n  address: \"C0:FF:EE:00:00:01\"\nboard: sim\nstate_directory: \(state)\n")
        let (status, lines) = try Self.run(["status", "-c", dir + "/lock.yaml", "--json"])
        #expect(status == 0, "\(lines)")
        #expect(lines.count == 1 && lines[0].hasPrefix("{\"state_directory\":\"\(state)\",\"lock\":\"locked\""), "\(lines)")
    }

    /// `log` for people and scripts: newest first, key names beside ids, CSV and JSON Lines,
    /// `--limit` and `--since`; `keys list --json`.
    @Test func theLogIsNewestFirstWithNamesAndExports() throws {
        let dir = try RuntimeDirectory.makeTemporary(prefix: "latchkey-cli")
        defer { RuntimeDirectory.remove(dir) }
        let store = try LockInspectionTests.lockStore(dir)
        try store.eventLog().append(LockInspectionTests.operation(.unlock, key: 3))
        try store.eventLog().append(LockInspectionTests.jam)

        let text = try Self.run(["log", "--state-dir", dir])
        #expect(text.status == 0)
        #expect(text.lines.map { $0.prefix(3) } == ["#3 ", "#2 ", "#1 "], "\(text.lines)")
        #expect(text.lines[1].contains("unlocked over Bluetooth by key 3 (alice, phone)"), "\(text.lines)")

        let json = try Self.run(["log", "--state-dir", dir, "--json", "--limit", "2"])
        #expect(json.lines.count == 2)
        #expect(json.lines.first?.hasPrefix("{\"sequence\":3,") == true)
        #expect(json.lines.last?.contains("\"key_id\":3,\"key_name\":\"alice, phone\"") == true, "\(json.lines)")

        let csv = try Self.run(["log", "--state-dir", dir, "--format", "csv"])
        #expect(csv.lines.first == "sequence,time,wall_ns,kind,key_id,key_name,lock,door,summary")
        #expect(csv.lines.count == 4 && csv.lines[2].contains(",LockOperation,3,\"alice, phone\",unlocked,closed,"), "\(csv.lines)")

        let future = try Self.run(["log", "--state-dir", dir, "--since", "@4000000000"])
        #expect(future.status == 0 && future.lines.isEmpty, "\(future.lines)")
        let bad = try Self.run(["log", "--state-dir", dir, "--since", "yesterday"])
        #expect(bad.status == 64 && bad.lines.first?.contains("--since 'yesterday' is not a time") == true, "\(bad.lines)")

        let keys = try Self.run(["keys", "list", "--state-dir", dir, "--json"])
        #expect(keys.status == 0 && keys.lines.count == 1)
        #expect(keys.lines.first?.hasPrefix("[{\"id\":3,\"name\":\"alice, phone\",\"role\":\"admin\",\"state\":\"active\"") == true,
                "\(keys.lines)")
    }

    /// `log --follow`: the last entries, then what the agent appends while it runs, until
    /// SIGINT (exit 0).
    @Test func followPrintsNewEntriesUntilInterrupted() throws {
        let dir = try RuntimeDirectory.makeTemporary(prefix: "latchkey-cli")
        defer { RuntimeDirectory.remove(dir) }
        let agent = try LockInspectionTests.lockStore(dir)
        try agent.eventLog().append(LockInspectionTests.operation(.unlock, key: 3))
        let binary = try #require(ExitStatusTests.latchkeyBinary())
        let loop = PosixEventLoop()
        let child = try ChildProcess(name: "latchkey log", executable: binary,
                                     arguments: ["log", "--state-dir", dir, "--follow", "--json", "--limit", "1"], loop: loop)
        var sequences: [String] = []
        child.onLine = { line in sequences.append(String(line.prefix(while: { $0 != "," }))) }
        #expect(try loop.run(until: { sequences == ["{\"sequence\":2"] }, timeout: .seconds(30)), "\(sequences)")
        try agent.eventLog().append(LockInspectionTests.jam)
        try agent.eventLog().append(LockInspectionTests.operation(.lock, key: 3))
        #expect(try loop.run(until: { sequences.count == 3 }, timeout: .seconds(30)), "\(sequences)")
        #expect(sequences == ["{\"sequence\":2", "{\"sequence\":3", "{\"sequence\":4"])
        child.signal(SIGINT)
        #expect(try loop.run(until: { child.outputEnded }, timeout: .seconds(30)))
        let status = child.waitForExit()
        #expect(status & 0x7f == 0 && (status >> 8) & 0xff == 0, "ended by its own handler, exit 0: \(status)")
    }

    /// Under systemd an error that ends an agent reaches the journal at priority err: its
    /// lines carry sd-daemon's `<3>` prefix. The shell points JOURNAL_STREAM at the very
    /// pipe its stderr is, as systemd does with its stream socket.
    @Test func underSystemdAFatalErrorIsAtPriorityErr() throws {
        let binary = try #require(ExitStatusTests.latchkeyBinary())
        let loop = PosixEventLoop()
        let script = "JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec \"$0\" lock -c /nonexistent/lock.yaml"
        let child = try ChildProcess(name: "sh", executable: "/bin/sh", arguments: ["-c", script, binary], loop: loop)
        var lines: [String] = []
        child.onLine = { lines.append($0) }
        #expect(try loop.run(until: { child.outputEnded }, timeout: .seconds(30)))
        let status = child.waitForExit()
        #expect((status >> 8) & 0xff == 78)
        #expect(lines == ["<3>Error: /nonexistent/lock.yaml: cannot read: No such file or directory"], "\(lines)")
        // Without the journal: the same line, no prefix.
        let plain = try Self.run(["lock", "-c", "/nonexistent/lock.yaml"])
        #expect(plain.status == 78 && plain.lines == ["Error: /nonexistent/lock.yaml: cannot read: No such file or directory"])
    }

    @Test func helpGroupsTheCommands() throws {
        let (status, lines) = try Self.run(["--help"])
        #expect(status == 0)
        let text = lines.joined(separator: "\n")
        let groups = ["AGENTS SUBCOMMANDS:", "KEYS AND PAIRING SUBCOMMANDS:", "INSPECTION SUBCOMMANDS:", "SIMULATION SUBCOMMANDS:"]
        let positions = groups.map { text.firstRange(of: $0)?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil }, "\(text)")
        // Simulation comes last, after everything a production user needs.
        if let sim = positions[3], let demo = text.firstRange(of: "  demo ")?.lowerBound,
           let lock = text.firstRange(of: "  lock ")?.lowerBound {
            #expect(demo > sim && lock < sim, "\(text)")
        }
    }

    static let commands: [[String]] = [
        ["lock"], ["phone"], ["phone", "pair"], ["lock-ctl"], ["phone-ctl"], ["keys"], ["keys", "add"],
        ["keys", "list"], ["keys", "revoke"], ["pair"], ["status"], ["log"], ["doctor"], ["demo"], ["air"],
        ["gpio-sim"], ["gpio-sim", "show"], ["gpio-sim", "set"],
    ]

    @Test(arguments: commands) func everyCommandsHelpHasAnExample(_ command: [String]) throws {
        let (status, lines) = try Self.run(["help"] + command)
        #expect(status == 0)
        #expect(lines.contains { $0.contains("Example") }, "\(command): \(lines.joined(separator: "\n"))")
    }

    /// Whatever the verdict (here a board with no GPIO chip on this machine: FIX lines), one
    /// JSON document, and the exit status of the text form.
    @Test func doctorJSONIsOneDocumentWhateverItsVerdict() throws {
        let arguments = ["doctor", "--board", "pi4b", "--config", "/nonexistent/lock.yaml"]
        let text = try Self.run(arguments)
        let json = try Self.run(arguments + ["--json"])
        #expect(json.status == text.status)
        #expect(json.lines.count == 1, "\(json.lines)")
        let document = try #require(json.lines.first)
        #expect(document.hasPrefix("{\"agent\":\"lock\",\"verdict\":\"") && document.hasSuffix("]}"))
        #expect(document.contains("\"findings\":[{\"verdict\":"))
    }
}
