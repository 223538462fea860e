import Foundation
import LatchkeyAgents
import LatchkeyCentral
import LatchkeyEvents
import LatchkeyLock
import LatchkeyManagers
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyStore
import Testing

/// docs/RESTORATION.md, "Relaunch rules": one test (at least) per row, each with the agents
/// built the way the daemons build them and their SQLite stores on disk.
@Suite struct RelaunchRulesTests {
    /// The log's events that close `decision`, with their recovered marks.
    static func closing(_ decision: DecisionID, in log: [LockEvent]) -> [LockEvent.Kind] {
        log.filter { $0.decision == decision }.map(\.kind)
    }

    static func isRecovered(_ kind: LockEvent.Kind) -> Bool {
        switch kind {
        case .lockOperation(let r), .lockOperationError(let r, _): r.recovered
        default: false
        }
    }

    /// Unlock from the phone and kill the lock while the motor runs toward unlocked.
    static func killTheLockMidUnlock(_ h: Household) throws -> DecisionID {
        guard case .success = h.command(.unlock) else { throw RuntimeError("the unlock was not accepted") }
        #expect(h.unlockDriven, "the motor runs toward unlocked")
        h.killLock()
        let open = try StateStores.openLock(h.lockState, loop: h.loop, wallClock: h.wallClock).interrupted
        return try #require(open?.operation == .unlock ? open?.id : nil, "the unlock is open in the journal")
    }

    // MARK: SIGKILL

    @Test func sigkillOfTheLockMidUnlockResumesItAndThePhoneKeepsItsLink() throws {
        let h = try Household()
        try h.settle()
        let discovered = h.phoneSent.discovery
        let decision = try Self.killTheLockMidUnlock(h)
        h.loop.advance(by: .milliseconds(500))  // systemd's RestartSec
        try h.startLock()
        #expect(h.count(EventKind.lockRecovering.name, in: h.lockEvents) == 1)
        #expect(h.unlockDriven, "decided 0.5 s ago, inside its 5 s window: carried on")
        #expect(h.advance(until: { h.lock?.controller.lockState == .unlocked }))
        let closing = Self.closing(decision, in: try h.log())
        #expect(closing.count == 1 && closing.allSatisfy(Self.isRecovered), "one recovered event closes it")
        #expect(h.count(EventKind.phoneLinkLost.name, in: h.phoneEvents) == 0, "the restarted lock adopted the link")
        guard case .success = h.command(.lock) else { Issue.record("lock after the restart"); return }
        #expect(h.phoneSent.discovery == discovered, "the phone's cached handles are still the lock's")
    }

    @Test func sigkillOfThePhoneWhileAwayAndAReturnWhileItIsDeadStillUnlocks() throws {
        let h = try Household()
        try h.settle()
        h.air.setPosition(100, of: Household.phoneAddress)
        #expect(h.advance(until: { h.phone?.presence == .away && h.count(EventKind.lockDeparture.name, in: h.lockEvents) == 1 },
                          limit: .seconds(10)))
        h.killPhone()
        // The owner comes home while the phone agent is dead: the system's request links.
        h.air.setPosition(1, of: Household.phoneAddress)
        #expect(h.advance(until: { !h.phoneController.connectedLinks.isEmpty }, limit: .seconds(1)))
        try h.startPhone()  // relaunched by systemd within the kernel's 2 s idle-link time
        // An intent does not survive the process (the cautious reading): the geofence's, again.
        h.phone?.arrivalIntent()
        #expect(h.advance(until: { h.unlockDriven }, limit: .seconds(3)), "the arrival unlock, as if it never died")
        #expect(h.count(EventKind.phoneRestored.name, in: h.phoneEvents) == 1)
        #expect(h.phoneSent.serviceDiscovery == 0, "the lock's services came back from the store")
    }

    /// The HIL's finding (81-systemd-restart): a fail-secure lock killed after its unlock
    /// completed (no decision open) is locked when it comes back, and the log must say so —
    /// not end on "unlocked" until the next event, which `latchkey status` would print.
    @Test func sigkillOfAFailSecureLockAfterItsUnlockLogsTheRelockItFindsAtStart() throws {
        let h = try Household(actuator: .hold)
        try h.settle()
        guard case .success = h.command(.unlock) else { Issue.record("the unlock was not accepted"); return }
        #expect(h.unlockDriven)
        #expect(try h.log().last?.lockStateAfter == .unlocked)
        h.killLock()  // the output falls back with the process: the bolt is home
        h.loop.advance(by: .milliseconds(500))
        try h.startLock()
        h.loop.run()
        #expect(!h.unlockDriven)
        let last = try #require(try h.log().last)
        #expect(last.lockStateBefore == .unlocked && last.lockStateAfter == .locked, "the log ends where the bolt is")
        #expect(last.kind == .lockOperation(LockOperationRecord(operation: .lock, source: .auto)),
                "the hardware's relock, no decision behind it")
        #expect(try h.log().filter { $0.lockStateAfter == .locked && $0.lockStateBefore == .unlocked }.count == 1)
        // A second start finds the log already locked: nothing more is logged.
        let count = try h.log().count
        h.killLock()
        try h.startLock()
        h.loop.run()
        #expect(try h.log().count == count)
    }

    // MARK: Crash

    @Test func aCrashRestartedAfterTheWindowLocksAndLogsTheAbandonedUnlock() throws {
        let h = try Household()
        try h.settle()
        let decision = try Self.killTheLockMidUnlock(h)
        h.loop.advance(by: .seconds(60))  // a crash loop: systemd's restart backoff
        try h.startLock()
        #expect(!h.unlockDriven && h.lockDriven, "an unlock past its window is not carried out")
        #expect(h.advance(until: { h.lock?.controller.lockState == .locked }))
        let closing = Self.closing(decision, in: try h.log())
        #expect(closing.count == 1 && closing.allSatisfy(Self.isRecovered))
        if case .lockOperationError(_, let error)? = closing.first { #expect(error == .interrupted) }
        else { Issue.record("expected LockOperationError(interrupted), got \(closing)") }
    }

    // MARK: systemctl stop

    @Test func stoppingTheLockWithdrawsItsWorkAndTheNextStartIsFresh() throws {
        let h = try Household()
        try h.settle()
        h.stopLock()
        #expect(try StateStores.openLock(h.lockState, loop: h.loop).restoration?.identifiers(.peripheral) == [])
        #expect(h.advance(until: { h.count(EventKind.phoneLinkLost.name, in: h.phoneEvents) == 1 }, limit: .seconds(5)))
        h.loop.advance(by: .seconds(60))
        let discoveredBefore = h.phoneSent.discovery
        try h.startLock()
        #expect(h.count(EventKind.lockRestored.name, in: h.lockEvents) == 0, "nothing handed back: a fresh start")
        #expect(h.advance(until: { h.count(EventKind.phoneGattReady.name, in: h.phoneEvents) == 2 }, limit: .seconds(10)))
        #expect(h.phoneSent.discovery == discoveredBefore, "same definition, same handles: the phone's cache holds")
    }

    @Test func stoppingThePhoneCancelsItsRequest() throws {
        let h = try Household()
        try h.settle()
        h.stopPhone()
        #expect(h.phoneController.pendingConnections.isEmpty, "withdrawn from the system: nothing re-links")
        #expect(RestorationRegistry(storage: try StateStores.openPhone(h.phoneState).restoration)
            .identifiersWithPendingWork(CentralRestorationState.self).isEmpty)
        h.loop.advance(by: .seconds(10))
        #expect(h.phoneController.connectedLinks.isEmpty)
        try h.startPhone()
        #expect(h.count(EventKind.phoneRestored.name, in: h.phoneEvents) == 0)
        #expect(h.advance(until: { h.count(EventKind.phoneGattReady.name, in: h.phoneEvents) == 2 }))
    }

    // MARK: Reboot

    @Test func aRebootResolvesAnOldUnlockToLockedAndThePhoneAssertsItsRequestAgain() throws {
        let h = try Household()
        try h.settle()
        let decision = try Self.killTheLockMidUnlock(h)
        h.reboot(downFor: .seconds(45))
        #expect(h.phoneController.pendingConnections.isEmpty, "the kernel's list went with the reboot")
        try h.startLock()
        try h.startPhone()
        h.loop.run()
        #expect(h.count(EventKind.lockRestored.name, in: h.lockEvents) == 1, "service and advertising from the store")
        #expect(!h.unlockDriven && h.lockDriven)
        #expect(h.phoneController.pendingConnections == [Household.lockAddress], "re-asserted from the store")
        #expect(h.advance(until: { h.count(EventKind.phoneGattReady.name, in: h.phoneEvents) == 2 }))
        #expect(h.phoneSent.serviceDiscovery == 0)
        #expect(Self.closing(decision, in: try h.log()).allSatisfy(Self.isRecovered))
    }

    // MARK: Controller power cycle

    @Test func aControllerPowerCycleOnEitherSideEndsInALinkAgain() throws {
        let h = try Household()
        try h.settle()
        h.lockController.powerOff()
        h.loop.advance(by: .seconds(1))
        h.lockController.powerOn()
        #expect(h.advance(until: { h.count(EventKind.phoneGattReady.name, in: h.phoneEvents) == 2 }))
        #expect(try h.log().contains { $0.kind == .doorLockAlarm(.lockRadioPowerCycled) })

        h.phoneController.powerOff()
        #expect(h.phoneController.pendingConnections.isEmpty)
        h.loop.advance(by: .seconds(1))
        h.phoneController.powerOn()
        h.loop.run()
        #expect(h.phoneController.pendingConnections == [Household.lockAddress], "asserted again at power-on")
        #expect(h.advance(until: { h.count(EventKind.phoneGattReady.name, in: h.phoneEvents) == 3 }))
        #expect(!h.unlockDriven)
    }

    // MARK: Corrupt store

    @Test func aCorruptLockStoreStartsLockedWithAFactoryResetAlarmAndForgetsTheKeys() throws {
        let h = try Household()
        try h.settle()
        _ = try Self.killTheLockMidUnlock(h)
        h.loop.advance(by: .milliseconds(500))
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: h.lockState + "/" + StateStores.lockFile))
        try? FileManager.default.removeItem(atPath: h.lockState + "/" + StateStores.lockFile + "-wal")
        try h.startLock()
        #expect(try h.log().first?.kind == .doorLockAlarm(.lockFactoryReset))
        #expect(!h.unlockDriven && h.lockDriven, "nothing to resume: the unlock is not carried out")
        #expect(h.advance(until: { h.lock?.controller.lockState == .locked }))
        h.loop.advance(by: .seconds(3))
        guard case .failure(.rejected) = h.command(.unlock) else { Issue.record("a key the lock no longer has"); return }
        #expect(!h.unlockDriven)
    }

    @Test func aCorruptPhoneStoreLeavesItsCommandsRefusedUntilItIsPairedAgain() throws {
        let h = try Household()
        try h.settle()
        guard case .success = h.command(.lock) else { Issue.record("a first command"); return }
        h.killPhone()
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: h.phoneState + "/" + StateStores.phoneFile))
        try? FileManager.default.removeItem(atPath: h.phoneState + "/" + StateStores.phoneFile + "-wal")
        try h.startPhone()
        #expect(h.count(EventKind.phoneRestored.name, in: h.phoneEvents) == 0)
        #expect(h.advance(until: { h.count(EventKind.phoneGattReady.name, in: h.phoneEvents) == 2 }))
        guard case .failure(.rejected) = h.command(.unlock) else {
            Issue.record("a counter that went back to zero must look replayed"); return
        }
        #expect(!h.unlockDriven)
    }
}
