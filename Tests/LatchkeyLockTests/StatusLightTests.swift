@testable import LatchkeyLock
import LatchkeySim
import Testing

/// The status LED follows the lock: dark while locked, lit while the door can be opened,
/// blinking while jammed — and it costs an idle lock no timer.
struct StatusLightTests {
    @Test func thePatternOfEachLockState() {
        #expect(StatusLight.pattern(for: .locked) == .off)
        #expect(StatusLight.pattern(for: .unknown) == .off)
        #expect(StatusLight.pattern(for: .unlocked) == .on)
        #expect(StatusLight.pattern(for: .unlocking) == .on)
        #expect(StatusLight.pattern(for: .locking) == .on)
        #expect(StatusLight.pattern(for: .notFullyLocked) == .blinking)
    }

    @Test(arguments: [false, true])
    func litWhileUnlockedDarkWhileLocked(activeLow: Bool) throws {
        let rig = try LockRig(activeLow: activeLow, statusLED: true)
        #expect(!rig.ledLit, "requested dark, before anything runs")
        rig.start()
        #expect(rig.state == .locked && !rig.ledLit)
        rig.controller.submit(LockCommand(.unlock, source: .remote))
        #expect(rig.state == .unlocking && rig.ledLit, "lit as soon as the bolt is on its way")
        rig.loop.run()
        #expect(rig.state == .unlocked && rig.ledLit)
        rig.submit(.lock)
        #expect(rig.state == .locked && !rig.ledLit)
        #expect(rig.loop.pendingCount == 0, "an idle locked lock keeps no timer for its LED")
    }

    @Test func blinksWhileJammedAndStopsWhenTheBoltArrives() throws {
        let rig = try LockRig(boltSensors: true, statusLED: true)
        rig.start()
        rig.submit(.unlock)
        rig.loop.advance(by: .seconds(5))
        #expect(rig.state == .notFullyLocked)
        var levels: [Bool] = []
        for _ in 0..<4 {
            levels.append(rig.ledLit)
            rig.loop.advance(by: StatusLight.blinkHalfPeriod)
        }
        #expect(levels == [true, false, true, false])
        // A movement that arrives ends the jam: a steady light again, no more toggling.
        rig.submit(.unlock)
        rig.setBolt(.unlocked)
        #expect(rig.state == .unlocked)
        var after: [Bool] = []
        for _ in 0..<4 {
            after.append(rig.ledLit)
            rig.loop.advance(by: StatusLight.blinkHalfPeriod)
        }
        #expect(after == [true, true, true, true])
    }

    @Test func aFailingLEDLineIsAFaultAndTheLockStillMoves() throws {
        let rig = try LockRig(statusLED: true)
        rig.start()
        rig.chip.failWrites(to: "SPARE")
        rig.submit(.unlock)
        #expect(rig.state == .unlocked)
        #expect(rig.unlockEnergized)
        #expect(rig.faults.contains { if case .statusLight = $0 { true } else { false } })
    }
}
