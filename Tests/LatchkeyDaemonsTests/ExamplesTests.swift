import LatchkeyBridge
import LatchkeyConfig
import LatchkeyPosix
@testable import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeySettings
import Testing

/// The example configurations in examples/ load with the loaders the agents use, against
/// the boards in board/: an example that drifts from the code fails here, not on a Pi.
@Suite struct ExamplesTests {
    static let examples = String(#filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3)
        .joined(separator: "/")) + "/examples"

    private func file(_ name: String) throws -> ConfigFile {
        try ConfigFile.load(Self.examples + "/" + name) { try readTextFile($0) }
    }

    /// One lock example per board, named after it, wired to it.
    @Test func everyBoardHasALockExampleThatLoads() throws {
        let boards = repositoryBoards.names()
        #expect(!boards.isEmpty)
        for board in boards {
            let settings = try LockSettings.load(try file("lock-\(board).yaml"), boards: repositoryBoards)
            #expect(settings.board?.name == board, "lock-\(board).yaml names board \(settings.board?.name ?? "none")")
        }
    }

    /// No lock example for a board that does not exist (a renamed or removed board).
    @Test func everyLockExampleIsForABoard() {
        let lockExamples = directoryEntries(Self.examples).filter { $0.hasPrefix("lock-") && $0.hasSuffix(".yaml") }
        #expect(lockExamples.count == repositoryBoards.names().count)
        for name in lockExamples {
            let board = String(name.dropFirst("lock-".count).dropLast(".yaml".count))
            #expect(repositoryBoards.names().contains(board), "\(name) names no board in board/")
        }
    }

    /// mqtt.yaml with the loader `latchkey mqtt` uses (its password file read as given here).
    @Test func theBridgeExampleLoads() throws {
        let settings = try MQTTSettings.load(try file("mqtt.yaml")) { path in
            guard path == "/etc/latchkey/mqtt.password" else { throw RuntimeError("unexpected \(path)") }
            return "s3cret\n"
        }
        #expect(settings.endpoint.security == .tls(caFile: "/etc/latchkey/mqtt-ca.pem", clientCertificate: nil))
        #expect(settings.locks.map(\.commands) == [[.lock]])
        #expect(settings.phones.map(\.arrivalIntent) == [true])
    }

    @Test func thePhoneExampleLoads() throws {
        let settings = try PhoneSettings.load(try file("phone.yaml"))
        #expect(settings.transport == .kernel(adapter: "hci0"))
        #expect(settings.execution.alertHook != nil)
    }
}
