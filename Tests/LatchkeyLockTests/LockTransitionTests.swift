import LatchkeyGPIO
@testable import LatchkeyLock
import LatchkeySim
import LatchkeyTransport
import Testing

/// Every lock state transition, driven through the simulated GPIO chip.
@Suite struct LockTransitionTests {
    @Test func unknownUntilStartThenMeasuredLocked() throws {
        let rig = try LockRig(boltSensors: true, bolt: .locked)
        #expect(rig.state == .unknown)
        #expect(rig.controller.doorState == .unknown)
        rig.start()
        #expect(rig.state == .locked)
        #expect(rig.controller.doorState == .closed)
        #expect(rig.recorded.isEmpty, "nothing to decide when the lock is where it should be")
    }

    @Test func unknownToUnlockedWhenMeasuredUnlocked() throws {
        let rig = try LockRig(boltSensors: true, bolt: .unlocked)
        rig.start()
        #expect(rig.state == .unlocked)
        #expect(!rig.unlockEnergized, "measuring moves nothing")
    }

    @Test func unknownBetweenResolvesByLocking() throws {
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, bolt: .between)
        rig.start()
        #expect(rig.state == .locking)
        #expect(rig.lockEnergized && !rig.unlockEnergized)
        #expect(rig.recorded.map(\.operation) == [.lock])
        #expect(rig.recorded.first?.source == .auto)
        rig.setBolt(.locked)
        #expect(rig.state == .locked)
        #expect(!rig.lockEnergized, "the motor stops at its limit switch")
    }

    @Test func lockedToUnlockingToUnlocked() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        rig.submit(.unlock, who: KeyID(3))
        #expect(rig.state == .unlocking)
        #expect(rig.unlockEnergized)
        rig.setBolt(.unlocked)
        #expect(rig.state == .unlocked)
        let event = try #require(rig.events.last)
        #expect(event.kind == .lockOperation(LockOperationRecord(operation: .unlock, source: .remote,
                                                                 who: KeyID(3), decision: DecisionID(1))))
        #expect(event.lockStateBefore == .locked && event.lockStateAfter == .unlocked)
        #expect(event.time == rig.loop.now)
        #expect(rig.journal.outcome(of: DecisionID(1)) == .succeeded)
    }

    @Test func unlockedToLockingToLocked() throws {
        let rig = try LockRig(boltSensors: true, bolt: .unlocked)
        rig.start()
        rig.submit(.lock)
        #expect(rig.state == .locking)
        #expect(!rig.unlockEnergized)
        rig.setBolt(.locked)
        #expect(rig.state == .locked)
        #expect(rig.operations.last?.operation == .lock)
    }

    @Test func withoutBoltSensorsTheCommandCompletingIsTheMovement() throws {
        let rig = try LockRig(boltSensors: false)
        rig.start()
        #expect(rig.state == .locked, "a fail-secure actuator requested inactive is locked")
        rig.controller.submit(LockCommand(.unlock, source: .remote))
        #expect(rig.state == .unlocking)
        rig.loop.run()
        #expect(rig.state == .unlocked)
        #expect(rig.unlockEnergized)
        rig.submit(.lock)
        #expect(rig.state == .locked)
        #expect(!rig.unlockEnergized)
    }

    @Test func unlockingToNotFullyLockedOnJam() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(5) - .milliseconds(1))
        #expect(rig.state == .unlocking)
        #expect(rig.controller.actuatorEnabled)
        #expect(rig.alarms.isEmpty)
        rig.loop.advance(by: .milliseconds(1))
        #expect(rig.state == .notFullyLocked)
        #expect(rig.alarms == [.lockJammed])
        #expect(rig.errors == [.jammed])
        #expect(!rig.controller.actuatorEnabled)
        #expect(!rig.unlockEnergized, "a jammed actuator is no longer driven")
        #expect(rig.journal.outcome(of: DecisionID(1)) == .jammed)
    }

    @Test func lockingToNotFullyLockedOnJam() throws {
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, bolt: .unlocked)
        rig.start()
        rig.submit(.lock)
        #expect(rig.lockEnergized)
        rig.loop.advance(by: .seconds(5) - .milliseconds(1))
        #expect(rig.state == .locking)
        rig.loop.advance(by: .milliseconds(1))
        #expect(rig.state == .notFullyLocked)
        #expect(rig.alarms == [.lockJammed])
        #expect(!rig.lockEnergized && !rig.unlockEnergized)
    }

    @Test func jamRecoveryNeedsASuccessfulMovement() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(5))
        #expect(!rig.controller.actuatorEnabled)
        // A second attempt that jams again keeps it disabled.
        rig.submit(.lock)
        rig.loop.advance(by: .seconds(5))
        #expect(rig.state == .notFullyLocked)
        #expect(!rig.controller.actuatorEnabled)
        // A movement that arrives re-enables it.
        rig.submit(.unlock)
        #expect(rig.state == .unlocking)
        rig.setBolt(.unlocked)
        #expect(rig.state == .unlocked)
        #expect(rig.controller.actuatorEnabled)
    }

    @Test func notFullyLockedToLocked() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(5))
        rig.submit(.lock)
        #expect(rig.state == .locking)
        rig.setBolt(.between)
        #expect(rig.state == .locking, "passing through the middle is not arriving")
        rig.setBolt(.locked)
        #expect(rig.state == .locked)
        #expect(rig.controller.actuatorEnabled)
    }

    @Test func manualTurnsAreSeenAndLogged() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        rig.setBolt(.between)
        #expect(rig.state == .notFullyLocked)
        rig.setBolt(.unlocked)
        #expect(rig.state == .unlocked)
        rig.setBolt(.locked)
        #expect(rig.state == .locked)
        #expect(rig.operations.map(\.operation) == [.unlock, .lock])
        #expect(rig.operations.allSatisfy { $0.source == .manual && $0.decision == nil })
        #expect(!rig.unlockEnergized, "a hand on the bolt drives nothing")
        #expect(rig.recorded.isEmpty)
    }

    @Test func actuatorFaultIsNotFullyLocked() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        let failing = FailingOutput()
        let sensors = rig.hardware.sensors
        let actuator = try ActuatorDriver(kind: .hold, unlockOutput: failing, hasBoltSensor: true, loop: rig.loop)
        let controller = try LockController(loop: rig.loop, actuator: actuator, sensors: sensors, journal: rig.journal)
        var events: [LockEvent] = []
        controller.onEvent = { events.append($0) }
        controller.start(recovered: nil)
        controller.submit(LockCommand(.unlock, source: .remote))
        #expect(controller.lockState == .notFullyLocked)
        #expect(!controller.actuatorEnabled)
        #expect(events.contains { if case .lockOperationError(_, .hardwareFault) = $0.kind { true } else { false } })
    }

    @Test func commandsDuringAMovementAreRefusedBusy() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        rig.submit(.unlock)
        rig.submit(.lock)
        #expect(rig.errors == [.busy])
        #expect(rig.state == .unlocking)
        #expect(rig.unlockEnergized)
        #expect(rig.recorded.count == 1)
    }

    @Test func alreadyThereSucceedsWithoutMoving() throws {
        let rig = try LockRig(boltSensors: true)
        rig.start()
        rig.submit(.lock)
        #expect(rig.state == .locked)
        #expect(rig.operations.map(\.operation) == [.lock])
        #expect(rig.recorded.isEmpty)
    }

    @Test func buttonToggles() throws {
        let rig = try LockRig()
        rig.start()
        rig.pressButton()
        #expect(rig.state == .unlocked)
        #expect(rig.operations.last?.source == .button)
        rig.pressButton()
        #expect(rig.state == .locked)
        #expect(rig.operations.map(\.operation) == [.unlock, .lock])
    }

    @Test func oneTouchLockingButtonNeverUnlocks() throws {
        var behaviour = LockBehaviour()
        behaviour.buttonAction = .lock
        let rig = try LockRig(behaviour: behaviour)
        rig.start()
        rig.pressButton()
        #expect(rig.state == .locked)
        #expect(!rig.unlockEnergized)
    }
}

/// An output whose every write fails, like a line whose chip went away.
final class FailingOutput: GPIOOutput {
    let name = "BROKEN"
    let isActive = false
    func set(_ active: Bool) throws(GPIOError) {
        throw GPIOError(.ioFailed, chip: "sim-lock", line: name, errno: 5)
    }
}
