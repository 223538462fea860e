import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import Testing

/// The operating mode across a restart of the lock agent (`OperatingModeRestoration`):
/// NoRemoteLockUnlock comes back; Passage comes back as Normal and locked, and says so.
struct OperatingModeRestartTests {
    /// A world whose phone holds an admin key, linked, and its lock agent.
    static func adminWorld() throws -> AgentWorld {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 1)
        w.keys.keys[1]!.role = .admin
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(5)))
        return w
    }

    static func modeChanges(_ w: AgentWorld) -> [OperatingModeChangeRecord] {
        w.lockLog.entries.compactMap { if case .operatingModeChange(let c) = $0.event.kind { c } else { nil } }
    }

    @Test func noRemoteSurvivesARestartAndStillRefusesRemoteUnlocks() throws {
        let w = try Self.adminWorld()
        #expect(w.command(.setOperatingMode, mode: OperatingMode.noRemoteLockUnlock.rawValue) == nil)
        #expect(w.operatingModes.mode == .noRemoteLockUnlock, "stored")
        #expect(Self.modeChanges(w) == [OperatingModeChangeRecord(.noRemoteLockUnlock, previous: .normal, source: .remote,
                                                                  who: KeyID(1))], "and logged, with who")

        w.killLock()
        try w.restartLock()
        #expect(w.lock.controller.operatingMode == .noRemoteLockUnlock)
        #expect(w.lockEvents.names().contains(EventKind.lockOperatingModeRestored.name))
        #expect(Self.modeChanges(w).count == 1, "restoring is not a change")
        #expect(w.advance(until: { w.phone.isLinked }, limit: .seconds(10)), "the link survived the restart")
        #expect(w.command(.unlock) == .rejected(.refusedByPolicy))
        #expect(!w.latchEnergised)
    }

    @Test func passageComesBackAsNormalAndLockedWithTheChangeInTheLog() throws {
        let w = try Self.adminWorld()
        #expect(w.command(.setOperatingMode, mode: OperatingMode.passage.rawValue) == nil)
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(1)), "passage holds the door unlocked")
        #expect(w.operatingModes.mode == .passage)

        // A crash: the fail-secure latch drops with the process; the lock comes back.
        w.killLock()
        try w.restartLock()
        #expect(w.lock.controller.operatingMode == .normal)
        w.loop.advance(by: .seconds(60))
        #expect(w.lock.controller.lockState == .locked)
        #expect(!w.latchEnergised, "nobody decided to unlock after the restart")
        #expect(w.operatingModes.mode == .normal, "the store follows: the next start reports nothing")
        #expect(Self.modeChanges(w).last == OperatingModeChangeRecord(.normal, previous: .passage, source: .auto))
        #expect(w.lockEvents.events.contains { $0.name == EventKind.lockOperatingModeNotRestored.name && $0.field("stored") == "passage" })

        w.killLock()
        try w.restartLock()
        #expect(Self.modeChanges(w).count == 2, "reported once")
    }

    @Test func aModeThatCannotBeStoredIsNotApplied() throws {
        let w = try Self.adminWorld()
        w.operatingModes.failWrites = true
        #expect(w.command(.setOperatingMode, mode: OperatingMode.noRemoteLockUnlock.rawValue) == .rejected(.storageFailure))
        #expect(w.lock.controller.operatingMode == .normal)
        #expect(Self.modeChanges(w).isEmpty)
    }
}
