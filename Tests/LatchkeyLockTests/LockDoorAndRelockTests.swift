import LatchkeyLock
import LatchkeySim
import LatchkeyTransport
import Testing

/// Auto-relock on the simulated clock, and the door sensor's rules.
@Suite struct LockDoorAndRelockTests {
    @Test func autoRelockAtExactlyAutoRelockTime() throws {
        let rig = try LockRig()
        rig.start()
        rig.submit(.unlock)
        #expect(rig.state == .unlocked)
        rig.loop.advance(by: .seconds(30) - .milliseconds(1))
        #expect(rig.state == .unlocked)
        #expect(rig.unlockEnergized)
        rig.loop.advance(by: .milliseconds(1))
        #expect(rig.state == .locked)
        #expect(!rig.unlockEnergized)
        let relock = try #require(rig.operations.last)
        #expect(relock.operation == .lock && relock.source == .auto && relock.who == nil)
        #expect(rig.recorded.last?.source == .auto, "the relock is a journaled decision too")
    }

    @Test func autoRelockTimeIsConfigurableAndCanBeOff() throws {
        var behaviour = LockBehaviour()
        behaviour.autoRelockTime = nil
        let rig = try LockRig(behaviour: behaviour)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(3600))
        #expect(rig.state == .unlocked)
        #expect(rig.loop.pendingCount == 0)
    }

    @Test func unlockWithTimeoutRelocksAfterItsTimeout() throws {
        let rig = try LockRig()
        rig.start()
        rig.submit(.unlockWithTimeout(.seconds(8)))
        rig.loop.advance(by: .seconds(8) - .milliseconds(1))
        #expect(rig.state == .unlocked)
        rig.loop.advance(by: .milliseconds(1))
        #expect(rig.state == .locked)
    }

    @Test func aFreshUnlockRestartsTheCountdown() throws {
        let rig = try LockRig()
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(20))
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(29))
        #expect(rig.state == .unlocked)
        rig.loop.advance(by: .seconds(1))
        #expect(rig.state == .locked)
    }

    @Test func relockRefusedWhileDoorOpenThenRelocksOnClose() throws {
        let rig = try LockRig()
        rig.start()
        rig.submit(.unlock)
        rig.setDoor(open: true)
        #expect(rig.controller.doorState == .open)
        rig.loop.advance(by: .seconds(60))
        #expect(rig.state == .unlocked, "no bolt into an open door")
        #expect(rig.unlockEnergized)
        #expect(rig.controller.machine.relockPending)
        rig.setDoor(open: false)
        #expect(rig.controller.doorState == .closed)
        #expect(rig.state == .locked)
        #expect(!rig.unlockEnergized)
        #expect(rig.operations.last?.source == .auto)
    }

    @Test func explicitLockRefusedWhileDoorOpen() throws {
        let rig = try LockRig()
        rig.start()
        rig.submit(.unlock)
        rig.setDoor(open: true)
        rig.submit(.lock, source: .button)
        #expect(rig.errors == [.doorOpen])
        #expect(rig.state == .unlocked)
        #expect(rig.unlockEnergized)
        #expect(rig.recorded.count == 1, "a refused command is never journaled")
    }

    @Test func doorClosingWithoutAPendingRelockDoesNotLock() throws {
        let rig = try LockRig()
        rig.start()
        rig.submit(.unlock)
        rig.setDoor(open: true)
        rig.setDoor(open: false)
        #expect(rig.state == .unlocked)
        rig.loop.advance(by: .seconds(30))
        #expect(rig.state == .locked)
    }

    @Test func doorOpenedWhileLockedIsForcedOpen() throws {
        let rig = try LockRig()
        rig.start()
        rig.setDoor(open: true)
        #expect(rig.controller.doorState == .forcedOpen)
        #expect(rig.doorChanges == [.forcedOpen])
        #expect(rig.alarms == [.doorForcedOpen])
        #expect(rig.state == .locked)
        rig.setDoor(open: false)
        #expect(rig.doorChanges == [.forcedOpen, .closed])
    }

    @Test func doorOpenedAfterAnUnlockIsNotForced() throws {
        let rig = try LockRig()
        rig.start()
        rig.submit(.unlock)
        rig.setDoor(open: true)
        #expect(rig.controller.doorState == .open)
        #expect(rig.alarms.isEmpty)
    }

    @Test func doorLeftOpenBecomesAjar() throws {
        var behaviour = LockBehaviour()
        behaviour.doorAjarTime = .seconds(60)
        let rig = try LockRig(behaviour: behaviour)
        rig.start()
        rig.submit(.unlock)
        rig.setDoor(open: true)
        rig.loop.advance(by: .seconds(60) - .milliseconds(1))
        #expect(rig.controller.doorState == .open)
        rig.loop.advance(by: .milliseconds(1))
        #expect(rig.controller.doorState == .ajar)
        #expect(rig.alarms == [.doorAjar])
        rig.setDoor(open: false)
        #expect(rig.controller.doorState == .closed)
        #expect(rig.state == .locked, "the relock that came due while ajar happens on close")
    }

    @Test func doorBounceIsOneChange() throws {
        let rig = try LockRig()
        rig.start()
        rig.submit(.unlock)
        for high in [true, false, true, false, true] {
            rig.chip.pull("DOOR", high: high)
            rig.loop.advance(by: .milliseconds(3))
        }
        rig.loop.advance(by: LockRig.debounce)
        #expect(rig.doorChanges == [.open])
    }

    @Test func pulseActuatorRelocksWhenThePulseEnds() throws {
        let rig = try LockRig(actuator: .pulse(.seconds(3)), maximumEnergizeTime: .seconds(10))
        rig.start()
        rig.submit(.unlock)
        #expect(rig.state == .unlocked)
        #expect(rig.unlockEnergized)
        rig.setDoor(open: true)
        rig.loop.advance(by: .seconds(3) - .milliseconds(1) - LockRig.debounce)
        #expect(rig.unlockEnergized)
        rig.loop.advance(by: .milliseconds(1))
        #expect(!rig.unlockEnergized, "a pulse ends even with the door open: the coil is not rated for more")
        #expect(rig.state == .locked)
        #expect(rig.operations.last == LockOperationRecord(operation: .lock, source: .auto))
    }

    @Test func pulseEndWatchedByBoltSensors() throws {
        let rig = try LockRig(actuator: .pulse(.seconds(3)), boltSensors: true)
        rig.start()
        rig.submit(.unlock)
        rig.setBolt(.unlocked)
        #expect(rig.state == .unlocked)
        rig.loop.advance(by: .seconds(3))
        #expect(rig.state == .locking)
        rig.setBolt(.locked)
        #expect(rig.state == .locked)
    }

    @Test func aPulseEndingBeforeTheBoltRetractsIsAJam() throws {
        let rig = try LockRig(actuator: .pulse(.seconds(3)), boltSensors: true)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(3))
        #expect(rig.state == .notFullyLocked, "the strike never released within its pulse")
        #expect(rig.alarms == [.lockJammed])
        #expect(!rig.unlockEnergized)
    }

    @Test func aBoltThatDoesNotSpringBackAfterThePulseIsAJam() throws {
        let rig = try LockRig(actuator: .pulse(.seconds(3)), boltSensors: true)
        rig.start()
        rig.submit(.unlock)
        rig.setBolt(.unlocked)
        rig.loop.advance(by: .seconds(3) + .seconds(5))
        #expect(rig.state == .notFullyLocked)
        #expect(rig.alarms == [.lockJammed])
        #expect(!rig.controller.actuatorEnabled)
    }

    @Test func holdActuatorDropsAtTheEnergizeLimit() throws {
        var behaviour = LockBehaviour()
        behaviour.autoRelockTime = nil
        let rig = try LockRig(maximumEnergizeTime: .seconds(120), behaviour: behaviour)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(120) - .milliseconds(1))
        #expect(rig.unlockEnergized)
        rig.loop.advance(by: .milliseconds(1))
        #expect(!rig.unlockEnergized)
        #expect(rig.state == .locked)
    }
}
