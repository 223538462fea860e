@testable import LatchkeyLock
import LatchkeySim
import LatchkeyTransport
import Testing

/// OperatingMode: Normal, NoRemoteLockUnlock, Passage.
@Suite struct LockModeTests {
    @Test func normalAcceptsEverySource() throws {
        let rig = try LockRig()
        rig.start()
        for source in [OperationSource.remote, .button, .manual, .auto] {
            rig.submit(.unlock, source: source)
            rig.submit(.lock, source: source)
        }
        #expect(rig.errors.isEmpty)
        #expect(rig.recorded.count == 8)
    }

    @Test func noRemoteLockUnlockRefusesRemoteOnly() throws {
        let rig = try LockRig(mode: .noRemoteLockUnlock)
        rig.start()
        rig.submit(.unlock, source: .remote)
        #expect(rig.errors == [.restricted])
        #expect(rig.state == .locked)
        #expect(!rig.unlockEnergized, "a refused command never moves the lock")
        #expect(rig.recorded.isEmpty)

        rig.pressButton()
        #expect(rig.state == .unlocked, "the inside button still works")
        rig.submit(.lock, source: .remote)
        #expect(rig.errors == [.restricted, .restricted])
        #expect(rig.state == .unlocked)
        rig.submit(.lock, source: .manual)
        #expect(rig.state == .locked)
    }

    @Test func noRemoteLockUnlockStillRelocks() throws {
        let rig = try LockRig(mode: .noRemoteLockUnlock)
        rig.start()
        rig.submit(.unlock, source: .button)
        rig.loop.advance(by: .seconds(30))
        #expect(rig.state == .locked)
    }

    @Test func passageHoldsTheLockUnlockedWithoutRelock() throws {
        let rig = try LockRig()
        rig.start()
        #expect(rig.controller.changeOperatingMode(.passage, source: .remote))
        rig.loop.run()
        #expect(rig.state == .unlocked)
        #expect(rig.unlockEnergized)
        #expect(rig.operations.last?.source == .remote)

        rig.loop.advance(by: .seconds(24 * 3600))
        #expect(rig.state == .unlocked, "no auto-relock in Passage")

        rig.submit(.lock, source: .button)
        #expect(rig.errors == [.restricted])
        #expect(rig.state == .unlocked)
    }

    @Test func leavingPassageRearmsTheRelock() throws {
        let rig = try LockRig(mode: .passage)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(60))
        #expect(rig.state == .unlocked)
        #expect(rig.controller.changeOperatingMode(.normal, source: .remote))
        rig.loop.advance(by: .seconds(30) - .milliseconds(1))
        #expect(rig.state == .unlocked)
        rig.loop.advance(by: .milliseconds(1))
        #expect(rig.state == .locked)
    }

    @Test func passageRefusedForAPulseActuator() throws {
        let rig = try LockRig(actuator: .pulse(.seconds(3)))
        rig.start()
        #expect(!rig.controller.changeOperatingMode(.passage, source: .remote))
        #expect(rig.controller.operatingMode == .normal)
        #expect(rig.state == .locked)
        #expect(!rig.unlockEnergized)
    }

    @Test func modeChangeRefusedDuringAMovement() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        rig.submit(.unlock)
        #expect(!rig.controller.machine.acceptsOperatingMode(.noRemoteLockUnlock), "asked before any change")
        #expect(!rig.controller.changeOperatingMode(.noRemoteLockUnlock, source: .remote))
        #expect(rig.controller.operatingMode == .normal)
    }

    /// Every change is in the audit log, with who asked; a mode restored before start (the
    /// stored one) and a no-op are not changes.
    @Test func aModeChangeIsAnEventWithWhoAsked() throws {
        let rig = try LockRig()
        #expect(rig.controller.setOperatingMode(.noRemoteLockUnlock, source: .auto), "restored before start")
        rig.start()
        #expect(rig.modeChanges.isEmpty)
        #expect(rig.controller.changeOperatingMode(.noRemoteLockUnlock, source: .remote, who: KeyID(3)))
        #expect(rig.modeChanges.isEmpty, "no change, no event")
        #expect(rig.controller.changeOperatingMode(.passage, source: .remote, who: KeyID(3)))
        rig.loop.run()
        #expect(rig.modeChanges == [OperatingModeChangeRecord(.passage, previous: .noRemoteLockUnlock, source: .remote,
                                                               who: KeyID(3))])
        // The change comes before the unlock it causes.
        let kinds = rig.events.map(\.kind)
        let change = try #require(kinds.firstIndex { if case .operatingModeChange = $0 { true } else { false } })
        let unlock = try #require(kinds.firstIndex { if case .lockOperation = $0 { true } else { false } })
        #expect(change < unlock)
    }

    @Test func passageIsAcceptedOnlyByAnActuatorThatCanHoldTheDoor() throws {
        let hold = try LockRig()
        hold.start()
        #expect(hold.controller.machine.acceptsOperatingMode(.passage))
        let pulse = try LockRig(actuator: .pulse(.seconds(3)))
        pulse.start()
        #expect(!pulse.controller.machine.acceptsOperatingMode(.passage))
        #expect(pulse.controller.machine.acceptsOperatingMode(.noRemoteLockUnlock))
    }
}
