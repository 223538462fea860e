import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyStore
import LatchkeyTransport
@testable import LatchkeyDaemons
import Testing

/// Store faults fail safe and loud, on the whole lock agent with its SQLite store
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
        #expect(h.lockEvents.events.contains { $0.name == EventKind.lockFault.name })

        // Back, unlocked; then read-only: locking is safe, the bolt moves all the same.
        store.writes = nil
        guard case .success = h.command(.unlock) else { Issue.record("unlock with the store back"); return }
        #expect(h.advance(until: { h.lock!.controller.lockState == .unlocked }))
        store.writes = .readOnly
        guard case .success = h.command(.lock) else { Issue.record("lock refused with a read-only store"); return }
        #expect(h.advance(until: { h.lock!.controller.lockState == .locked }))
        #expect(h.lock!.controller.unwrittenJournalEntries == 3, "the decision, its outcome and the command's counter wait")
        #expect(storeField(h) == "store=journal")

        // The store returns: both are written, in order, and the fault clears.
        store.writes = nil
        #expect(h.advance(until: { h.count(EventKind.lockJournalCaughtUp.name, in: h.lockEvents) == 1 }, limit: .seconds(70)))
        #expect(storeField(h) == "store=ok")
        let lockDecision = try #require(h.lock!.controller.lastRecordedDecision)
        h.killLock()
        let reopened = try StateStores.openLock(h.lockState, loop: h.loop, wallClock: h.wallClock)
        #expect(reopened.lastDecisionID == lockDecision, "the lock's decision is on disk")
        #expect(reopened.interrupted == nil, "with its outcome")
    }

    /// The counter of the phone's last command, as it sent it.
    func lastCounterSent(_ h: Household) -> UInt64? {
        h.phoneEvents.events.last { $0.name == EventKind.phoneCommandSent.name }?.field("counter").flatMap { UInt64($0) }
    }

    func counterOnDisk(_ h: Household) throws -> UInt64 {
        try StateStores.openKeys(h.lockState).lastCounter(keyID: h.key.id)
    }

    /// HIL scenario 23 found it: with the disk full, `lock` moved the bolt and the phone was
    /// told `storage failure` (the counter could not be written after the accepted lock).
    /// The answer says what happened; the counter is held in memory (a replay of it is
    /// refused) and written with the journal's backlog once the store takes writes.
    @Test func aLockWhoseCounterCannotBeWrittenIsAnsweredDoneAndItsCounterWrittenLater() throws {
        let h = try Household()
        let store = FaultyStore()
        h.wrapLockStores = store.wrap
        try h.settle()
        guard case .success = h.command(.unlock) else { Issue.record("unlock with the store working"); return }
        #expect(h.advance(until: { h.lock!.controller.lockState == .unlocked }))
        let durableBefore = try counterOnDisk(h)

        store.writes = .noSpace
        let answer = h.command(.lock)
        guard case .success = answer else { Issue.record("the phone was told \(String(describing: answer))"); return }
        let counter = try #require(lastCounterSent(h))
        #expect(h.advance(until: { h.lock!.controller.lockState == .locked }), "the bolt moved")
        #expect(h.lockEvents.events.contains { $0.name == EventKind.lockCounterWriteFailed.name })
        #expect(try counterOnDisk(h) == durableBefore, "the store is full: the counter waits in memory")
        #expect(storeField(h) == "store=journal")

        // A frame with that counter again (the phone's counter rolled back) is a replay. Two
        // back: the phone's `present` on the new link takes the first (a replay of the unlock's).
        h.killPhone()
        let phoneStore = try StateStores.openPhone(h.phoneState).state
        var state = try #require(try phoneStore.load())
        state.counter = counter - 2
        try phoneStore.save(state)
        try h.startPhone()
        #expect(h.advance(until: { h.count(EventKind.phoneGattReady.name, in: h.phoneEvents) >= 2 }))
        h.loop.advance(by: .milliseconds(200))  // the phone's `present` command
        let replay = h.command(.lock)
        #expect(lastCounterSent(h) == counter)
        guard case .failure(.rejected(.replayedCounter)) = replay else {
            Issue.record("a counter the lock took, not yet on disk, went through again: \(String(describing: replay))"); return
        }

        // The store takes writes again: the backlog writes the lock's record and its counter.
        store.writes = nil
        #expect(h.advance(until: { h.count(EventKind.lockJournalCaughtUp.name, in: h.lockEvents) == 1 }, limit: .seconds(70)))
        #expect(try counterOnDisk(h) == counter)
        #expect(storeField(h)?.contains("journal") == false)
    }

    /// HIL scenario 23 found it: a lock started on a read-only card exited 1 (it opened its
    /// store for writing), a restart loop under systemd. It runs degraded instead: the
    /// store read-only, `lock` done, `unlock` refused, the fault in `status` and a warning;
    /// read-write again, what waited is written.
    @Test func aLockStartedOnAReadOnlyCardRunsDegradedUntilTheStoreIsWritable() throws {
        let h = try Household()
        h.wrapLockStores = { $0 }  // the stored lockout counts, as the daemon has
        try h.settle()
        guard case .success = h.command(.unlock) else { Issue.record("unlock with the store working"); return }
        #expect(h.advance(until: { h.lock!.controller.lockState == .unlocked }))
        h.stopLock()
        let readyBefore = h.count(EventKind.phoneGattReady.name, in: h.phoneEvents)

        h.readOnlyCard = true
        var lockEverDriven = false
        try h.startLock()
        #expect(h.reopener != nil)
        #expect(h.lockEvents.events.filter { $0.name == EventKind.lockStoreReadOnly.name }.count == 1, "said once")
        #expect(storeField(h)?.hasPrefix("store=read-only") == true)
        // A motor without sensors starts by driving to locked (locking is safe): unrecorded.
        #expect(h.advance(until: { lockEverDriven = lockEverDriven || h.lockDriven
                                   return h.lock!.controller.lockState == .locked }))
        #expect(lockEverDriven)
        #expect(h.advance(until: { h.count(EventKind.phoneGattReady.name, in: h.phoneEvents) > readyBefore }))
        let durableBefore = try counterOnDisk(h)

        var unlockEverDriven = false
        let refused = h.command(.unlock)
        h.advance(until: { unlockEverDriven = unlockEverDriven || h.unlockDriven; return false }, limit: .seconds(5))
        guard case .failure(.rejected(.storageFailure)) = refused else {
            Issue.record("unlock on a read-only store: \(String(describing: refused))"); return
        }
        #expect(!unlockEverDriven)
        guard case .success = h.command(.lock) else { Issue.record("lock refused on a read-only store"); return }
        let counter = try #require(lastCounterSent(h))
        #expect(h.lock!.controller.lockState == .locked)
        #expect(try counterOnDisk(h) == durableBefore)

        // Read-write again: reopened within the retry schedule (1 s, 2 s, 4 s ... after the start).
        h.readOnlyCard = false
        #expect(h.advance(until: { h.count(EventKind.lockStoreWritable.name, in: h.lockEvents) == 1 }, limit: .seconds(70)))
        #expect(h.reopener?.store.isReadOnly == false)
        #expect(h.count(EventKind.lockJournalCaughtUp.name, in: h.lockEvents) >= 1, "what waited is written at once")
        #expect(try counterOnDisk(h) == counter)
        #expect(storeField(h) == "store=ok", "the journal written, the phone's binding saved")
        guard case .success = h.command(.unlock) else { Issue.record("unlock once the store is writable"); return }
        #expect(h.advance(until: { h.lock!.controller.lockState == .unlocked }))
    }

    /// No store and a read-only card: nothing to run on. A clear error, with the exit status
    /// the lock unit does not restart on (73, EX_CANTCREAT).
    @Test func noStoreOnAReadOnlyCardIsAClearErrorWithItsOwnExitStatus() throws {
        let h = try Household()
        let empty = h.directory + "/empty"
        do {
            _ = try StateStores.openLock(empty, loop: h.loop, fileSystem: .readOnly(while: { true }))
            Issue.record("opened a store that is not there")
        } catch {
            #expect(error.exitStatus == StateStores.exCantCreate)
            #expect(error.description.contains("read-only"))
        }
    }

    /// A card too full to lay the WAL file out: the lock runs, the start says why once, and
    /// `status` shows `wal=grows` (`AgentStore.prepareWAL`); with room again, `wal=laid_out`.
    @Test func aWALThatCannotBeLaidOutIsAWarningAndAStatusField() throws {
        let h = try Household()
        let directory = h.directory + "/nearly-full"
        var warnings: [String] = []
        let stores = try StateStores.openLock(directory, loop: h.loop, fileSystem: .nearlyFull(2 << 20),
                                              warn: { warnings.append($0) })
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("2097152 bytes free") == true, "\(warnings)")
        #expect(stores.store?.walStatus == "grows")
        try stores.journal.record(LockDecision(id: DecisionID(1), operation: .unlock, source: .remote, who: nil,
                                               decidedAt: .zero, deadline: Instant(nanoseconds: 5_000_000_000)))
        try stores.store?.close()

        warnings = []
        let roomy = try StateStores.openLock(directory, loop: h.loop, warn: { warnings.append($0) })
        #expect(warnings.isEmpty)
        #expect(roomy.store?.walStatus == "laid_out")
        #expect(roomy.interrupted?.id == DecisionID(1))
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
        #expect(h.advance(until: { h.count(EventKind.phoneGattReady.name, in: h.phoneEvents) >= 2 }))
        guard case .success = h.command(.lock) else { Issue.record("the phone's command was refused"); return }
        #expect(store.saved.filter { $0 == "latchkey.lock.bindings" }.count == savedBefore, "nothing saved over")
        #expect(h.lockEvents.events.contains {
            $0.name == EventKind.lockRestorationFailed.name && $0.field("error")?.hasPrefix("bindings unreadable") == true
        })
        #expect(storeField(h)?.contains("bindings") == true)
    }
}
