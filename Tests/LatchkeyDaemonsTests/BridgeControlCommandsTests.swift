import LatchkeyAgents
import LatchkeyInspection
import LatchkeyLock
@testable import LatchkeyControl
@testable import LatchkeyDaemons
import LatchkeySecurity
import LatchkeySimGPIO
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

    /// The unlock line as the lock's GPIO chip shows it from outside.
    func unlockLineIsHigh() throws -> Bool {
        try FileGPIOSimulator(directory: rig.directory + "/gpio/rig-lock").isHigh("motor_unlock")
    }

    /// The start refused: exit 78 with the file and line of `bridge_key_id` and why.
    func startIsRefused(bridgeKey: UInt32, because why: String) throws {
        try rig.addToLockConfig("bridge_key_id: \(bridgeKey)")
        let lines = try readTextFile(rig.directory + "/lock.yaml").split(separator: "\n", omittingEmptySubsequences: false)
        let line = 1 + (lines.firstIndex { $0.hasPrefix("bridge_key_id:") } ?? -2)
        do {
            try rig.startLock()
            Issue.record("the lock started with bridge_key_id naming key \(bridgeKey)")
        } catch let error as RuntimeError {
            #expect(error.exitStatus == RuntimeError.exConfig)
            #expect(error.description == "\(rig.directory)/lock.yaml:\(line): field 'bridge_key_id': key \(bridgeKey) \(why)")
        }
        #expect(rig.lock == nil)
    }

    @Test func aKeyTheLockDoesNotHaveStopsTheStart() throws {
        try startIsRefused(bridgeKey: 42, because: BridgeKeyRule.Problem.absent.description)
    }

    @Test func aKeyRevokedBeforeTheStartStopsTheStart() throws {
        try StateStores.openKeys(rig.lockState).revoke(id: 9)
        try startIsRefused(bridgeKey: 9, because: "is revoked")
    }

    @Test func anAdminKeyNamedForTheBridgeStopsTheStart() throws {
        try StateStores.openKeys(rig.lockState).add(PhoneKey(id: 10, name: "owner", secret: CommandSealing.newSecret(),
                                                             role: .admin))
        try startIsRefused(bridgeKey: 10, because: BridgeKeyRule.Problem.admin.description)
    }

    @Test func anArrivalKeyNamedForTheBridgeStopsTheStart() throws {
        try StateStores.openKeys(rig.lockState).add(PhoneKey(id: 11, name: "owner-arrival", secret: CommandSealing.newSecret(),
                                                             role: .admin, mayRequestArrivalUnlock: true))
        try startIsRefused(bridgeKey: 11, because: BridgeKeyRule.Problem.admin.description)
        // The store refuses the flag on a user key; one an older version stored is refused all the same.
        let older = PhoneKey(id: 12, name: "old-user", secret: CommandSealing.newSecret(), role: .user, mayRequestArrivalUnlock: true)
        #expect(BridgeKeyRule.problem(older) == .arrivalUnlock)
    }

    @Test func aKeyRevokedWhileTheLockRunsIsRefusedAndAuditedAtItsNextCommand() throws {
        try start()
        // The bridge works...
        #expect(try rig.send("bridge unlock", to: rig.lock).first?.hasPrefix("ok accepted decision=") == true)
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .unlocked })
        #expect(try rig.send("bridge lock", to: rig.lock).first?.hasPrefix("ok accepted decision=") == true)
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .locked && !self.rig.lock!.agent.controller.machine.isMoving })
        // ...until the owner revokes its key from another process (`latchkey keys revoke 9`).
        try StateStores.openKeys(rig.lockState).revoke(id: 9)
        let decided = rig.lock!.agent.controller.lastRecordedDecision
        let before = rig.lock!.agent.statusFrame.lastEventSequence
        #expect(try rig.send("bridge unlock", to: rig.lock) == ["error the bridge's key 9 is revoked"])
        // An accepted command is decided and moving before its answer: nothing of the kind.
        #expect(rig.lock!.agent.controller.lockState == .locked && !rig.lock!.agent.controller.machine.isMoving)
        #expect(rig.lock!.agent.controller.lastRecordedDecision == decided)
        #expect(try !unlockLineIsHigh())
        // Audited under the key, as a revoked phone's frame: DisabledUserDenied (read as
        // `latchkey log` reads it: the bridge itself may read nothing more).
        let newest = try LockInspection(directory: rig.lockState).newest(limit: 1)
        #expect(newest.first?.sequence == UInt64(before) + 1)
        let record = LockOperationRecord(operation: .unlock, source: .proprietaryRemote, who: KeyID(9))
        #expect(newest.first?.event.kind == .lockOperationError(record, .disabledUserDenied))
        #expect(newest.first?.event.summary.hasPrefix("unlock through the MQTT bridge by key 9 refused: revoked key") == true)
        // A lock is refused too: a revoked key is nobody's.
        #expect(try rig.send("bridge lock", to: rig.lock) == ["error the bridge's key 9 is revoked"])
        // And the bridge reads the household's log and state no more.
        for read in ["events 1", "state", "follow"] {
            #expect(try rig.send(read, to: rig.lock) == ["error the bridge's key 9 is revoked"], "\(read)")
        }
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
