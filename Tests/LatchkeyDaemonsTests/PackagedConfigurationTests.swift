import LatchkeyConfig
import LatchkeyControl
import LatchkeyPosix
@testable import LatchkeyDaemons
@testable import LatchkeySettings
import Testing

/// The configurations the Debian package installs as conffiles in /etc/latchkey
/// (packaging/deb/etc/latchkey, scripts/build-deb): as shipped, each agent refuses them with
/// the field to fill in (exit 78, no restart: a fresh install never drives a lock's lines on
/// a guessed board), and once that one line is uncommented they load.
@Suite struct PackagedConfigurationTests {
    static let directory = String(#filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3)
        .joined(separator: "/")) + "/packaging/deb/etc/latchkey"

    private func text(_ name: String) throws -> String { try readTextFile(Self.directory + "/" + name) }

    private func refusal(_ load: () throws(ConfigError) -> Void) -> ConfigError? {
        do { try load(); return nil } catch { return error }
    }

    @Test func theShippedLockConfigurationNamesNoBoardAndIsRefused() throws {
        let shipped = try text("lock.yaml")
        let error = refusal { () throws(ConfigError) in
            _ = try LockSettings.load(ConfigFile(path: "lock.yaml", text: shipped), boards: repositoryBoards)
        }
        #expect(error?.field == "gpio", "\(String(describing: error))")
        #expect(error?.message.contains("board:") == true, "the error says how to name a board")
    }

    @Test func theShippedLockConfigurationLoadsForEveryBoardOnceItsBoardLineIsUncommented() throws {
        let shipped = try text("lock.yaml")
        #expect(shipped.contains("\n# board: pi4b\n"))
        for board in repositoryBoards.names() where board != "sim" {
            let edited = shipped.replacingOccurrences(of: "\n# board: pi4b\n", with: "\nboard: \(board)\n")
            let settings = try LockSettings.load(ConfigFile(path: "lock.yaml", text: edited), boards: repositoryBoards)
            #expect(settings.board?.name == board)
            #expect(settings.transport == .kernel(adapter: "hci0"))
            #expect(settings.stateDirectory == "/var/lib/latchkey/lock")
        }
    }

    /// The phone's file names no lock: `latchkey phone pair` finds it by a scan and writes its
    /// address into paired.key (docs/SECURITY.md, "Pairing"), so the file loads as shipped.
    @Test func theShippedPhoneConfigurationNamesNoLockAndLeavesItToPairing() throws {
        let shipped = try text("phone.yaml")
        let settings = try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: shipped))
        #expect(settings.lockAddress == nil)
        #expect(settings.keyID == nil, "the key comes from paired.key")
        #expect(settings.transport == .kernel(adapter: "hci0"))
    }

    @Test func theShippedPhoneConfigurationLoadsOnceItsLockAddressIsUncommented() throws {
        let shipped = try text("phone.yaml")
        #expect(shipped.contains("\n# lock_address: "))
        let edited = shipped.replacingOccurrences(of: "\n# lock_address: ", with: "\nlock_address: ")
        let settings = try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: edited))
        #expect(settings.transport == .kernel(adapter: "hci0"))
        #expect(settings.stateDirectory == "/var/lib/latchkey/phone")
    }
}
