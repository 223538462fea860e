import LatchkeyConfig
import LatchkeyControl
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyPosix
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import LatchkeyDaemons
@testable import LatchkeySettings
import LatchkeySimGPIO

/// The repository's own board/ directory: the definitions we ship are the ones tested.
let repositoryBoards = BoardCatalog(directories: [
    String(#filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")) + "/board",
])

struct BoardTests {
    func lockConfig(_ extra: String = "") -> String {
        """
        transport: sim
        sim:
          address: "C0:FF:EE:00:00:01"
        state_directory: /tmp/x
        \(extra)
        """
    }

    func load(_ text: String, board: String? = nil) throws -> LockSettings {
        try LockSettings.load(ConfigFile(path: "lock.yaml", text: text), board: board, boards: repositoryBoards)
    }

    @Test func theRepositoryShipsEveryBoard() {
        #expect(repositoryBoards.names() == ["pi3b", "pi4b", "pi5", "sim", "zero2w"])
    }

    @Test func theBoardsStatusLEDIsWiredUnlessTheFileWiresItsOwn() throws {
        #expect(try load(lockConfig(), board: "pi4b").wiring.statusLED == .init("GPIO22"))
        let own = try load(lockConfig("gpio:\n  status_led_line: GPIO26\n  status_led_active_low: true"), board: "pi4b")
        #expect(own.wiring.statusLED == .init("GPIO26", activeLow: true))
        #expect(own.wiring.namedLines.contains { $0 == ("status_led_line", "GPIO26") })
    }

    @Test(arguments: ["pi3b", "pi4b", "pi5", "zero2w", "sim"])
    func everyBoardLoadsIntoAValidWiring(name: String) throws {
        let s = try load(lockConfig(), board: name)
        #expect(s.board?.name == name)
        #expect(!(s.board?.safeState.isEmpty ?? true))
        // Every wired line is one the board offers (checked by the loader; asserted here too).
        for (_, line) in s.wiring.namedLines { #expect(s.board?.lines.contains(line) == true) }
        // The actuator configuration is accepted by the driver's own checks.
        let loop = PosixEventLoop()
        let chip = SimulatedGPIOChip(label: s.wiring.chipLabel, lineNames: s.board?.lines ?? [], loop: loop)
        let hardware = try LockHardware.open(s.wiring, chips: GPIOChipSet([chip]), loop: loop)
        // Outputs start inactive: the request itself sets the safe level.
        for (field, line) in s.wiring.namedLines where field == "unlock_line" || field == "lock_line" {
            #expect(chip.isHigh(line) == false)
        }
        withExtendedLifetime(hardware) {}
    }

    @Test func chipsAreNamedByLabelPerBoard() throws {
        #expect(try load(lockConfig(), board: "pi4b").wiring.chipLabel == "pinctrl-bcm2711")
        #expect(try load(lockConfig(), board: "pi5").wiring.chipLabel == "pinctrl-rp1")
        #expect(try load(lockConfig(), board: "pi3b").wiring.chipLabel == "pinctrl-bcm2835")
        #expect(try load(lockConfig(), board: "zero2w").wiring.chipLabel == "pinctrl-bcm2835")
        let pi5 = try load(lockConfig(), board: "pi5").wiring
        #expect(pi5.actuator == .motor(runTime: .milliseconds(1500)))
        #expect(pi5.boltLocked?.line == "GPIO23" && pi5.boltLocked?.activeLow == true)
        #expect(try load(lockConfig(), board: "pi4b").wiring.actuator == .pulse(.milliseconds(500)))
    }

    @Test func theFileCanNameTheBoard() throws {
        let s = try load(lockConfig("board: pi4b"))
        #expect(s.wiring.unlockOutput.line == "GPIO17")
        #expect(s.board?.statusLEDLine == "GPIO22")
    }

    @Test func theCommandLineBoardWinsOverTheFile() throws {
        #expect(try load(lockConfig("board: pi4b"), board: "pi5").wiring.chipLabel == "pinctrl-rp1")
    }

    @Test func theConfigurationsGPIOFieldsOverrideTheBoards() throws {
        let s = try load(lockConfig("""
            board: pi4b
            gpio:
              door_line: GPIO16
              pulse_ms: 250
            """))
        #expect(s.wiring.door?.line == "GPIO16")
        #expect(s.wiring.door?.bias == .pullUp)  // from the board
        #expect(s.wiring.actuator == .pulse(.milliseconds(250)))
        #expect(s.wiring.maximumEnergizeTime == .seconds(1))
    }

    @Test func theBoardsJamTimeoutIsTheDefaultAndTheFileOverridesIt() throws {
        #expect(try load(lockConfig("board: pi5")).behaviour.jamTimeout == .seconds(5))
        let s = try load(lockConfig("""
            board: pi5
            lock:
              jam_timeout_seconds: 8
            """))
        #expect(s.behaviour.jamTimeout == .seconds(8))
    }

    @Test func anUnknownBoardListsTheKnownOnes() {
        #expect {
            _ = try load(lockConfig(), board: "pi9")
        } throws: { error in
            let text = "\(error)"
            return text.contains("unknown board 'pi9'") && text.contains("pi3b, pi4b, pi5, sim, zero2w")
        }
    }

    @Test func aBoardIsFoundByTheOneNameItStarts() throws {
        #expect(try load(lockConfig(), board: "pi4").board?.name == "pi4b")
        #expect(try load(lockConfig(), board: "zero").board?.name == "zero2w")
        #expect(try load(lockConfig(), board: "pi5").board?.name == "pi5", "an exact name wins")
        #expect {
            _ = try load(lockConfig(), board: "pi")
        } throws: { error in
            "\(error)".contains("ambiguous board 'pi'") && "\(error)".contains("pi3b, pi4b, pi5, sim, zero2w")
        }
    }

    @Test func aLineTheBoardLacksListsTheLinesItHas() {
        #expect {
            _ = try load(lockConfig("""
                board: pi4b
                gpio:
                  button_line: GPIO99
                """))
        } throws: { error in
            // lock.yaml line 7 (`button_line: GPIO99`): file, line and field.
            let text = "\(error)"
            return text.hasPrefix("lock.yaml:7: field 'gpio.button_line': 'GPIO99' is not a line of board pi4b")
                && text.contains("GPIO2 GPIO3")
        }
    }

    @Test func aLineTheBoardFileWiresButLacksNamesTheBoardFile() throws {
        let (dir, path) = try writeBoard("bad", from: "pi4b") { $0.replacingOccurrences(of: "door_line: GPIO5", with: "door_line: GPIO50") }
        defer { unlink(path); rmdir(dir) }
        let wiredAt = try #require(try readTextFile(path).split(separator: "\n", omittingEmptySubsequences: false)
            .firstIndex { $0.contains("door_line: GPIO50") }) + 1
        #expect {
            _ = try LockSettings.load(ConfigFile(path: "lock.yaml", text: lockConfig("board: bad")),
                                      boards: BoardCatalog(directories: [dir]))
        } throws: { error in
            guard let e = error as? ConfigError else { return false }
            return e.file == path && e.line == wiredAt && e.field == "gpio.door_line"
                && e.message.hasPrefix("'GPIO50' is not a line of board bad")
        }
    }

    /// A copy of a shipped board under another name, edited, in a new directory.
    func writeBoard(_ name: String, from original: String, _ edit: (String) -> String) throws -> (dir: String, path: String) {
        let dir = try RuntimeDirectory.makeTemporary(prefix: "latchkey-boards")
        let text = edit(try readTextFile(repositoryBoards.directories[0] + "/\(original).yaml")
            .replacingOccurrences(of: "board: \(original)", with: "board: \(name)"))
        let path = dir + "/\(name).yaml"
        let fd = open(path, O_WRONLY | O_CREAT, 0o600)
        _ = text.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
        return (dir, path)
    }

    @Test func aBadOverrideIsReportedInTheLockConfiguration() {
        #expect {
            _ = try load(lockConfig("""
                board: pi4b
                gpio:
                  door_bias: sideways
                """))
        } throws: { error in
            guard let e = error as? ConfigError else { return false }
            return e.file == "lock.yaml" && e.field == "gpio.door_bias"
        }
    }

    @Test func aBadFieldInABoardFileNamesThatFile() throws {
        let (dir, path) = try writeBoard("bad", from: "pi4b") { $0.replacingOccurrences(of: "door_bias: pull-up", with: "door_bias: sideways") }
        defer { unlink(path); rmdir(dir) }
        let catalog = BoardCatalog(directories: [dir])
        #expect {
            _ = try LockSettings.load(ConfigFile(path: "lock.yaml", text: lockConfig("board: bad")), boards: catalog)
        } throws: { error in
            guard let e = error as? ConfigError else { return false }
            return e.file == dir + "/bad.yaml" && e.field == "gpio.door_bias" && e.line != nil
        }
    }

    @Test func withoutABoardTheGPIOSectionIsRequired() {
        #expect {
            _ = try load(lockConfig())
        } throws: { error in "\(error)".contains("--board") }
    }

    @Test func pathNamesAreNotBoards() {
        #expect(throws: ConfigError.self) { _ = try repositoryBoards.load("../etc/passwd") }
    }

    @Test func aCheckoutIsFoundFromTheBinarysPath() {
        #expect(BoardCatalog.checkoutRoot(of: "/src/lk/.build/x86_64-unknown-linux-gnu/debug/latchkey") == "/src/lk")
        #expect(BoardCatalog.checkoutRoot(of: "/usr/local/bin/latchkey") == nil)
        let standard = BoardCatalog.standard(environment: [:], executable: "/usr/local/bin/latchkey")
        #expect(standard.directories == ["/usr/share/latchkey/board"])
        let env = BoardCatalog.standard(environment: ["LATCHKEY_BOARD_PATH": "/a:/b"], executable: "/x/.build/debug/latchkey")
        #expect(env.directories == ["/a", "/b"])
    }
}
