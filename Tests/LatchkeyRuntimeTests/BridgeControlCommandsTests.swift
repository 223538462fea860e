import LatchkeyLock
@testable import LatchkeyRuntime
import LatchkeySecurity
import Testing

/// The lock's control-socket commands for the MQTT bridge, attacked through the socket: a
/// command naming no key of the lock, and one while the lock refuses remote operation,
/// never move the bolt; the audit log is read by cursor.
@Suite(.serialized) final class BridgeControlCommandsTests {
    let rig: DaemonRig

    init() throws {
        rig = try DaemonRig()
        try StateStores.openKeys(rig.lockState).add(PhoneKey(id: 9, name: "mqtt-bridge", secret: CommandSealing.newSecret(),
                                                             role: .user))
        try rig.startLock()
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .locked })
    }

    deinit { rig.close() }

    @Test func aKeyTheLockDoesNotHaveMovesNothing() throws {
        #expect(try rig.send("bridge unlock 42", to: rig.lock) == ["error key 42 is not a key of this lock (revoked or never added)"])
        #expect(rig.lock!.agent.controller.lockState == .locked)
        #expect(rig.lockEvents("lock.command_accepted").isEmpty)
    }

    @Test func noRemoteModeRefusesTheBridge() throws {
        #expect(rig.lock!.agent.controller.setOperatingMode(.noRemoteLockUnlock, source: .manual))
        #expect(try rig.send("bridge unlock 9", to: rig.lock) == ["error refused by the lock: restricted"])
        #expect(rig.lock!.agent.controller.lockState == .locked)
    }

    @Test func anAcceptedCommandIsAuditedUnderTheBridgesKeyAndReadByCursor() throws {
        let before = rig.lock!.agent.statusFrame.lastEventSequence
        #expect(try rig.send("bridge unlock 9", to: rig.lock).first?.hasPrefix("ok accepted decision=") == true)
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .unlocked })
        let lines = try rig.send("events \(before + 1)", to: rig.lock)
        #expect(lines.last == "ok events next=\(before + 2) last=\(before + 1)")
        #expect(lines.first?.hasPrefix("event \(before + 1) {\"seq\":\(before + 1),\"time\":") == true)
        #expect(lines.first?.contains("\"operation\":\"unlock\",\"source\":\"proprietaryRemote\",\"who\":9") == true)
        #expect(try rig.send("state", to: rig.lock) == ["ok lock=unlocked door=closed actuator=enabled"])
    }

    @Test func wrongArgumentsAreTheUsage() throws {
        #expect(try rig.send("bridge open 9", to: rig.lock) == ["error usage: bridge lock|unlock KEY_ID"])
        #expect(try rig.send("events", to: rig.lock) == ["error usage: events FROM"])
    }
}
