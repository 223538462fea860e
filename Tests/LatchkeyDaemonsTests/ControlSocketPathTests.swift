@testable import LatchkeyControl
import Testing

/// Where the control socket goes when the state directory is on a read-only card, and where
/// clients look for it (docs/ARCHITECTURE.md, "Store faults").
@Suite struct ControlSocketPathTests {
    @Test func aStateDirectorysSocketFallsBackToTheRuntimeDirectoryOfTheSameName() {
        #expect(ControlSocketPath.primary("/var/lib/latchkey/lock") == "/var/lib/latchkey/lock/control.sock")
        // The packaged lock: the unit's RuntimeDirectory=latchkey/lock.
        #expect(ControlSocketPath.readOnlyFallback("/var/lib/latchkey/lock") == "/run/latchkey/lock/control.sock")
        #expect(ControlSocketPath.readOnlyFallback(forSocket: "/var/lib/latchkey/lock/control.sock")
                == "/run/latchkey/lock/control.sock")
        #expect(ControlSocketPath.directory(of: "/run/latchkey/lock/control.sock") == "/run/latchkey/lock")
    }

    @Test func aSocketThatIsNoStateDirectorysHasNoFallback() {
        #expect(ControlSocketPath.readOnlyFallback(forSocket: "/tmp/bridge-test.sock") == nil)
    }

    @Test func connectingWhereNothingListensThrowsTheFirstPathsError() {
        do {
            _ = try ControlSocketPath.connect(to: "/nonexistent-latchkey-test/state/control.sock")
            Issue.record("connected to nothing")
        } catch {
            #expect("\(error)".contains("/nonexistent-latchkey-test/state/control.sock"))
        }
    }
}
