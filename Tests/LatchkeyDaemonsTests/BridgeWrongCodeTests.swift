import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyDaemons
import LatchkeySecurity
import Testing

/// A wrong unlock code the bridge refused reaches the lock (`bridge wrong-code`) and counts as
/// a failure of the bridge's key in its own lockout — never in the overall count a network
/// guesser could use to lock every phone out (docs/SECURITY.md, "The network door").
@Suite(.serialized) final class BridgeWrongCodeTests {
    let rig: DaemonRig

    init() throws {
        rig = try DaemonRig()
        // An overall limit below the key's: were the bridge's failures counted overall, it would engage first.
        try rig.addBridgeKey(more: "lock:\n  overall_wrong_code_limit: 2\n  wrong_code_entry_limit: 3")
        try rig.connectAsTheBridge()  // the bridge's user, as under systemd
        try rig.startLock()
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .locked })
    }

    deinit { rig.close() }

    @Test func wrongCodesLockOutTheBridgesKeyOnlyAndThenItsUnlocksWhateverTheCode() throws {
        let before = rig.lock!.agent.statusFrame.lastEventSequence
        #expect(try rig.send("bridge wrong-code", to: rig.lock) == ["ok counted key=9"])
        #expect(try rig.send("bridge wrong-code", to: rig.lock) == ["ok counted key=9"])
        #expect(try rig.send("bridge wrong-code", to: rig.lock) == ["ok counted key=9 locked_out_seconds=15"])
        let lockouts = rig.lockEvents(EventKind.lockLockout.name)
        #expect(lockouts.count == 1 && lockouts[0].field("key") == "9")
        #expect(!lockouts.contains { $0.field("principal") == "overall" }, "the overall count never moved")
        // Locked out: the right code's unlock and another guess get the same refusal, uncounted.
        #expect(try rig.send("bridge unlock", to: rig.lock) == ["error key 9 is locked out after failed attempts"])
        #expect(try rig.send("bridge wrong-code", to: rig.lock) == ["error key 9 is locked out after failed attempts"])
        #expect(rig.lock!.agent.controller.lockState == .locked)
        // In the audit log: three refused unlocks under the bridge's key, one lockout alarm.
        let lines = try rig.send("events \(before + 1)", to: rig.lock)
        #expect(lines.filter { $0.contains("\"kind\":\"lock_operation_error\"") && $0.contains("\"who\":9")
            && $0.contains("\"error\":\"invalidCredential\"") }.count == 3)
        #expect(lines.filter { $0.contains("\"alarm\":\"wrongCodeEntryLimit\"") }.count == 1)
    }

    @Test func aRevokedBridgeKeyNeitherCountsNorMovesTheBolt() throws {
        // The owner cuts the bridge off with `latchkey keys revoke` (docs/SECURITY.md, "Control sockets").
        try StateStores.openKeys(rig.lockState).revoke(id: 9)
        let refused = "error the bridge's key 9 is revoked"
        #expect(try rig.send("bridge wrong-code", to: rig.lock) == [refused])
        #expect(try rig.send("bridge unlock", to: rig.lock) == [refused])
        #expect(rig.lockEvents(EventKind.lockBridgeWrongCode.name).isEmpty)
        #expect(rig.lock!.agent.controller.lockState == .locked)
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).isEmpty)
    }
}
