import LatchkeyLock
@testable import LatchkeyRuntime
import LatchkeySecurity
import Testing

/// The lock's control-socket commands for the MQTT bridge, attacked through the socket: a
/// bridge key that is not a key of the lock, a lock that names none, and a command while the
/// lock refuses remote operation never move the bolt; the audit log is read by cursor.
/// (A peer of another user: ControlPeerAttackTests.)
@Suite(.serialized) final class BridgeControlCommandsTests {
    let rig: DaemonRig

    init() throws {
        rig = try DaemonRig()
        try StateStores.openKeys(rig.lockState).add(PhoneKey(id: 9, name: "mqtt-bridge", secret: CommandSealing.newSecret(),
                                                             role: .user))
    }

    deinit { rig.close() }

    /// The lock with `bridge_key_id: key` (none when nil), locked.
    func start(bridgeKey: UInt32? = 9) throws {
        if let bridgeKey { try rig.addToLockConfig("bridge_key_id: \(bridgeKey)") }
        try rig.startLock()
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .locked })
    }

    @Test func aKeyTheLockDoesNotHaveMovesNothing() throws {
        try start(bridgeKey: 42)
        #expect(try rig.send("bridge unlock", to: rig.lock) == ["error key 42 is not a key of this lock (revoked or never added)"])
        #expect(rig.lock!.agent.controller.lockState == .locked)
        #expect(rig.lockEvents("lock.command_accepted").isEmpty)
    }

    @Test func aLockThatNamesNoBridgeKeyRefusesBridgeCommands() throws {
        try start(bridgeKey: nil)
        #expect(try rig.send("bridge unlock", to: rig.lock)
                == ["error this lock names no key for the bridge: add bridge_key_id to lock.yaml"])
        #expect(rig.lock!.agent.controller.lockState == .locked)
    }

    @Test func noRemoteModeRefusesTheBridge() throws {
        try start()
        #expect(rig.lock!.agent.controller.setOperatingMode(.noRemoteLockUnlock, source: .manual))
        #expect(try rig.send("bridge unlock", to: rig.lock) == ["error refused by the lock: restricted"])
        #expect(rig.lock!.agent.controller.lockState == .locked)
    }

    @Test func anAcceptedCommandIsAuditedUnderTheBridgesKeyAndReadByCursor() throws {
        try start()
        let before = rig.lock!.agent.statusFrame.lastEventSequence
        #expect(try rig.send("bridge unlock", to: rig.lock).first?.hasPrefix("ok accepted decision=") == true)
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .unlocked })
        let lines = try rig.send("events \(before + 1)", to: rig.lock)
        #expect(lines.last == "ok events next=\(before + 2) last=\(before + 1)")
        #expect(lines.first?.hasPrefix("event \(before + 1) {\"seq\":\(before + 1),\"time\":") == true)
        #expect(lines.first?.contains("\"operation\":\"unlock\",\"source\":\"proprietaryRemote\",\"who\":9") == true)
        #expect(try rig.send("state", to: rig.lock) == ["ok lock=unlocked door=closed actuator=enabled"])
    }

    @Test func wrongArgumentsAreTheUsage() throws {
        try start()
        #expect(try rig.send("bridge open", to: rig.lock) == ["error usage: bridge lock|unlock|wrong-code (the key is bridge_key_id in lock.yaml)"])
        // A key id the caller picks is not an argument at all: the lock's configuration names the key.
        #expect(try rig.send("bridge unlock 1", to: rig.lock) == ["error usage: bridge lock|unlock|wrong-code (the key is bridge_key_id in lock.yaml)"])
        #expect(try rig.send("events", to: rig.lock) == ["error usage: events FROM"])
        #expect(rig.lock!.agent.controller.lockState == .locked)
    }
}
