import LatchkeyAgents
import LatchkeyLock
import LatchkeyLockProtocol
@testable import LatchkeyRuntime
import Testing

/// Store faults fail safe and loud (issue 14), on the whole lock agent with its SQLite store
/// behind a fault switch (FaultyStore): a full, broken or read-only card.
@Suite struct StoreFaultTests {
    func storeField(_ h: Household) -> String? {
        LockControlCommands.status(h.lock!).split(separator: " ").first { $0.hasPrefix("store=") }.map(String.init)
    }

    @Test func noUnlockWithoutADurableRecordButALockMovesAndIsRecordedWhenTheStoreReturns() throws {
        let h = try Household()
        let store = FaultyStore()
        h.wrapLockStores = store.wrap
        try h.settle()
        #expect(storeField(h) == "store=ok")

        // Full: the unlock is refused and the bolt never moves.
        store.writes = .noSpace
        var unlockEverDriven = false
        let refused = h.command(.unlock)
        h.advance(until: { unlockEverDriven = unlockEverDriven || h.unlockDriven; return false }, limit: .seconds(5))
        guard case .failure = refused else { Issue.record("unlock went through: \(String(describing: refused))"); return }
        #expect(!unlockEverDriven)
        #expect(h.lock!.controller.lockState == .locked)
        #expect(storeField(h) == "store=journal", "status shows the fault")
        #expect(h.lockEvents.events.contains { $0.name == "lock.fault" })

        // Back, unlocked; then read-only: locking is safe, the bolt moves all the same.
        store.writes = nil
        guard case .success = h.command(.unlock) else { Issue.record("unlock with the store back"); return }
        #expect(h.advance(until: { h.lock!.controller.lockState == .unlocked }))
        store.writes = .readOnly
        guard case .success = h.command(.lock) else { Issue.record("lock refused with a read-only store"); return }
        #expect(h.advance(until: { h.lock!.controller.lockState == .locked }))
        #expect(h.lock!.controller.unwrittenJournalEntries == 2, "the decision and its outcome wait")
        #expect(storeField(h) == "store=journal")

        // The store returns: both are written, in order, and the fault clears.
        store.writes = nil
        #expect(h.advance(until: { h.count("lock.journal_caught_up", in: h.lockEvents) == 1 }, limit: .seconds(70)))
        #expect(storeField(h) == "store=ok")
        let lockDecision = try #require(h.lock!.controller.lastRecordedDecision)
        h.killLock()
        let reopened = try StateStores.openLock(h.lockState, loop: h.loop, wallClock: h.wallClock)
        #expect(reopened.lastDecisionID == lockDecision, "the lock's decision is on disk")
        #expect(reopened.interrupted == nil, "with its outcome")
    }

    /// Bindings that cannot be read were treated as empty and saved over; now they are left
    /// as they are, and status says so.
    @Test func bindingsThatCannotBeReadAreNotSavedOver() throws {
        let h = try Household()
        let store = FaultyStore()
        h.wrapLockStores = store.wrap
        try h.settle()
        h.killPhone()
        #expect(h.advance(until: { h.lock!.peripheral.centrals.isEmpty }))
        let savedBefore = store.saved.filter { $0 == "latchkey.lock.bindings" }.count
        store.restorationReads = .io
        try h.startPhone()
        #expect(h.advance(until: { h.count("phone.gatt_ready", in: h.phoneEvents) >= 2 }))
        guard case .success = h.command(.lock) else { Issue.record("the phone's command was refused"); return }
        #expect(store.saved.filter { $0 == "latchkey.lock.bindings" }.count == savedBefore, "nothing saved over")
        #expect(h.lockEvents.events.contains {
            $0.name == "lock.restoration_failed" && $0.field("error")?.hasPrefix("bindings unreadable") == true
        })
        #expect(storeField(h)?.contains("bindings") == true)
    }
}
