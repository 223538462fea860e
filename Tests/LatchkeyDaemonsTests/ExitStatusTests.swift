#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
@testable import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeyDemo
@testable import LatchkeySettings
import Logging
import Testing

/// Exit codes systemd can act on: a configuration error exits 78 (EX_CONFIG) with
/// its file:line message, and the units do not restart on 78. Before, it exited 1 and
/// `Restart=always` restarted it in a loop.
@Suite struct ExitStatusTests {
    /// A lock configuration whose second line names a transport that does not exist.
    static let badLock = "name: Front Door\ntransport: warp\n"

    func writeBadConfig(_ text: String = ExitStatusTests.badLock) throws -> (dir: String, path: String) {
        let dir = try RuntimeDirectory.makeTemporary(prefix: "latchkey-exit")
        let path = dir + "/lock.yaml"
        try writeFile(path, text)
        return (dir, path)
    }

    @Test func aBadLockConfigurationIsAConfigurationError() throws {
        let (dir, path) = try writeBadConfig()
        defer { RuntimeDirectory.remove(dir) }
        #expect {
            try AgentProcesses.runLock(configPath: path, logger: .quiet)
        } throws: { error in
            guard let error = error as? RuntimeError else { return false }
            return error.exitStatus == 78 && error.description.hasPrefix("\(path):2")
        }
    }

    @Test func aMissingPhoneConfigurationIsAConfigurationError() throws {
        #expect {
            try AgentProcesses.runPhone(configPath: "/nonexistent/latchkey/phone.yaml", logger: .quiet)
        } throws: { error in (error as? RuntimeError)?.exitStatus == 78 }
    }

    /// A phone with a valid configuration but no key yet (installed, not paired) or a key
    /// file no restart can repair: 78, so systemd does not run it into its start limit and
    /// the gave-up alert (before: exit 1, restarted until the limit).
    @Test(arguments: [("unpaired", nil), ("malformed", "key_id: 4\nsecret: 12\n"), ("no lock", "key_id: 4\nsecret: \(String(repeating: "ab", count: 32))\n")])
    func aPhoneWithoutAUsableKeyIsAConfigurationError(_ case_: String, _ keyText: String?) throws {
        let dir = try RuntimeDirectory.makeTemporary(prefix: "latchkey-exit")
        defer { RuntimeDirectory.remove(dir) }
        mkdir(dir + "/state", 0o700)
        try writeFile(dir + "/phone.yaml", """
            transport: sim
            sim:
              air_socket: \(dir)/air.sock
              address: "C0:FF:EE:00:00:02"
            state_directory: \(dir)/state
            """)
        let keyFile = dir + "/state/" + PairedKeyFile.fileName
        if let keyText {
            try writeFile(keyFile, keyText)
        }
        #expect {
            try AgentProcesses.runPhone(configPath: dir + "/phone.yaml", logger: .quiet)
        } throws: { error in
            guard let error = error as? RuntimeError, error.exitStatus == 78 else { return false }
            switch case_ {
            case "unpaired": return error.description == PairedKeyFile.missingAdvice(keyFile)
            case "malformed": return error.description.contains("secret must be 64 hex digits")
            default: return error.description.hasPrefix("no lock_address in the configuration")
            }
        }
    }

    /// The built binary, as systemd runs it: exit status 78 and the file:line message on
    /// standard error.
    @Test func theBinaryExits78WithTheFileAndLine() throws {
        let binary = try #require(Self.latchkeyBinary(), "the latchkey executable is built next to the tests")
        let (dir, path) = try writeBadConfig()
        defer { RuntimeDirectory.remove(dir) }
        let loop = PosixEventLoop()
        let child = try ChildProcess(name: "lock", executable: binary, arguments: ["lock", "--config", path], loop: loop)
        var lines: [String] = []
        child.onLine = { lines.append($0) }
        #expect(try loop.run(until: { child.outputEnded }, timeout: .seconds(20)))
        let status = child.waitForExit()
        #expect(status & 0x7f == 0, "exited, not killed")
        #expect((status >> 8) & 0xff == 78)
        #expect(lines.contains { $0.hasPrefix("Error: \(path):2") }, "\(lines)")
    }

    /// `latchkey mqtt --check`: unlock to a broker across the network in clear is a
    /// configuration error (docs/SECURITY.md, "The network door"): 78 and file:line:field.
    @Test func theBridgeCheckRefusesUnlockOverClearTextToAnotherHost() throws {
        let binary = try #require(Self.latchkeyBinary(), "the latchkey executable is built next to the tests")
        let dir = try RuntimeDirectory.makeTemporary(prefix: "mqtt-check")
        defer { RuntimeDirectory.remove(dir) }
        let path = dir + "/mqtt.yaml"
        try writeFile(path, "broker: mqtt://homeassistant.lan\nlocks:\n  - name: Front Door\n    commands: [lock, unlock]\n")
        let loop = PosixEventLoop()
        let child = try ChildProcess(name: "mqtt", executable: binary, arguments: ["mqtt", "--check", "--config", path], loop: loop)
        var lines: [String] = []
        child.onLine = { lines.append($0) }
        #expect(try loop.run(until: { child.outputEnded }, timeout: .seconds(20)))
        let status = child.waitForExit()
        #expect(status & 0x7f == 0 && (status >> 8) & 0xff == 78)
        #expect(lines.contains { $0.hasPrefix("Error: \(path):4: field 'locks[0].commands': `unlock` needs a protected broker") },
                "\(lines)")
    }

    /// Both units stop restarting on 78; the lock's also on 73 (a read-only card with no store).
    @Test func theUnitsPreventARestartOn78() throws {
        let root = String(#filePath.split(separator: "/Tests/").first!)
        for (unit, statuses) in [("latchkey-lock.service", ["78", "73"]), ("latchkey-phone.service", ["78"])] {
            let text = try readTextFile(root + "/systemd/" + unit)
            let line = text.split(separator: "\n").first { $0.hasPrefix("RestartPreventExitStatus=") }
            let listed = line?.dropFirst("RestartPreventExitStatus=".count).split(separator: " ").map(String.init)
            #expect(listed == statuses, "\(unit)")
        }
        #expect(StateStores.exCantCreate == 73)
    }

    /// `latchkey` sits next to the test bundle in the build directory.
    static func latchkeyBinary() -> String? {
        var directory = currentExecutablePath()
        while let slash = directory.lastIndex(of: "/"), directory != "/" {
            directory = String(directory[..<slash])
            let candidate = directory + "/latchkey"
            if access(candidate, X_OK) == 0 { return candidate }
            if directory.hasSuffix("/.build") { return nil }
        }
        return nil
    }
}
