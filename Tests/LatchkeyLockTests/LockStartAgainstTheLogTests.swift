import LatchkeyLock
import LatchkeySim
import LatchkeyTransport
import Testing

/// Start-up against the audit log's last state: a log that ends "unlocked" on a lock that
/// measures locked (a fail-secure output fell back when the last run died, with no decision
/// open) gets the relock the hardware made, so the log — and `latchkey status` — say what
/// the door is. Nothing is decided and nothing moves for it.
@Suite struct LockStartAgainstTheLogTests {
    @Test func aLogEndingUnlockedOnALockThatRestsLockedGetsTheHardwareRelock() throws {
        let rig = try LockRig()
        rig.start(lastLogged: .unlocked)
        #expect(rig.state == .locked)
        #expect(rig.operations == [LockOperationRecord(operation: .lock, source: .auto)])
        let event = try #require(rig.events.first)
        #expect(event.lockStateBefore == .unlocked && event.lockStateAfter == .locked)
        #expect(rig.journal.entries.isEmpty, "nothing decided")
        #expect(!rig.unlockEnergized)
    }

    @Test func aLogThatAlreadySaysLockedOrIsEmptyGetsNothing() throws {
        for logged in [LockState.locked, nil] {
            let rig = try LockRig()
            rig.start(lastLogged: logged)
            #expect(rig.state == .locked)
            #expect(rig.events.isEmpty, "\(String(describing: logged))")
        }
    }

    /// Bolt sensors that read unlocked: the log is right; the lock arms its relock as before.
    @Test func aBoltMeasuredUnlockedLeavesTheLogAsItIs() throws {
        var behaviour = LockBehaviour()
        behaviour.autoRelockTime = .seconds(5)
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, behaviour: behaviour, bolt: .unlocked)
        rig.start(lastLogged: .unlocked)
        #expect(rig.state == .unlocked)
        #expect(rig.events.isEmpty)
    }

    /// An open decision is what the start reports (its one recovered event); no second event.
    @Test func anOpenDecisionIsReportedByItsOwnEventAlone() throws {
        let loop = ManualEventLoop()
        loop.advance(by: .seconds(10))
        let stale = LockDecision(id: DecisionID(5), operation: .unlock, source: .remote,
                                 decidedAt: .zero, deadline: .zero + .seconds(5))
        let rig = try LockRig(loop: loop)
        rig.start(recovered: stale, lastLogged: .unlocked)
        #expect(rig.errors == [.interrupted])
        #expect(rig.events.count == 1)
    }
}
