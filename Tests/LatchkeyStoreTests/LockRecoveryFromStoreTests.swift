import LatchkeyGPIO
@testable import LatchkeyLock
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyStore
import LatchkeyTransport
import Testing

/// The journal and the lock together: a lock process dies mid-unlock (the decision is on
/// disk, the motor has not finished), a new process starts on a fresh monotonic clock and
/// asks the store what was interrupted.
@Suite struct LockRecoveryFromStoreTests {
    /// One lock process: a motor without bolt sensors (it runs 2 s per movement) on a
    /// simulated chip, its own manual loop starting at zero, the journal in the store.
    /// Without sensors its position is unknown at start, so a first start drives it to
    /// locked (decision 1).
    final class LockProcess {
        let loop = ManualEventLoop()
        let chip: SimulatedGPIOChip
        let store: AgentStore
        let journal: StoredDecisionJournal
        let controller: LockController

        /// `open`: how this process opens its store (the fixture's `open()` by default).
        init(_ fixture: StoreFixture, open: ((StoreFixture) throws -> AgentStore)? = nil) throws {
            chip = SimulatedGPIOChip(label: "sim-lock", lineNames: ["UNLOCK", "LOCK"], loop: loop)
            let wiring = LockWiring(chipLabel: "sim-lock", actuator: .motor(runTime: .seconds(2)),
                                    unlockOutput: .init("UNLOCK"), lockOutput: .init("LOCK"))
            let hardware = try LockHardware.open(wiring, chips: GPIOChipSet([chip]), loop: loop)
            store = try open?(fixture) ?? fixture.open()
            journal = store.decisionJournal(monotonicNow: { [loop] in loop.now })
            let next = DecisionID((try journal.lastDecisionID()?.rawValue ?? 0) + 1)
            controller = try LockController(loop: loop, hardware: hardware, journal: journal, firstDecisionID: next)
            controller.start(recovered: try journal.interrupted())
            loop.run()
        }

        var driving: (unlock: Bool, lock: Bool) { (chip.isHigh("UNLOCK"), chip.isHigh("LOCK")) }
    }

    /// The first process: reaches locked, accepts an unlock (decision 2) and is killed while
    /// the motor runs. It is returned so that its connection stays open, never closed or
    /// checkpointed, like a SIGKILLed process's; it never runs again.
    static func killedMidUnlock(_ fixture: StoreFixture) throws -> LockProcess {
        let first = try LockProcess(fixture)
        first.loop.advance(by: .seconds(2))
        #expect(first.controller.lockState == .locked)
        first.controller.submit(LockCommand(.unlock, source: .remote, who: KeyID(7)))
        first.loop.run()
        #expect(first.driving.unlock, "the motor runs toward unlocked")
        return first
    }

    @Test func anUnlockInterruptedLongAgoEndsLocked() throws {
        let fixture = StoreFixture()
        let killed = try Self.killedMidUnlock(fixture)

        fixture.clocks.advance(by: .seconds(60))
        let second = try LockProcess(fixture)
        #expect(second.driving == (unlock: false, lock: true), "drives to locked, never resumes the unlock")
        #expect(try second.journal.outcome(of: DecisionID(2)) == .abandoned)
        second.loop.advance(by: .seconds(2))
        #expect(second.controller.lockState == .locked)
        withExtendedLifetime(killed) {}
    }

    @Test func anUnlockInterruptedAMomentAgoIsResumed() throws {
        let fixture = StoreFixture()
        let killed = try Self.killedMidUnlock(fixture)

        fixture.clocks.advance(by: .seconds(1))  // systemd restarts it within the 5 s window
        let second = try LockProcess(fixture)
        #expect(second.driving == (unlock: true, lock: false))
        second.loop.advance(by: .seconds(2))
        #expect(second.controller.lockState == .unlocked)
        #expect(try second.journal.outcome(of: DecisionID(2)) == .succeeded)

        second.controller.submit(LockCommand(.lock, source: .remote))
        second.loop.run()
        #expect(try second.journal.lastDecisionID() == DecisionID(3), "ids go on after the restart")
        withExtendedLifetime(killed) {}
    }
}
