import LatchkeyEvents
@testable import LatchkeyLockAgent
import Testing

/// `StoreHealth` on its own: what is at fault is named in `status`'s order, a read-only store is
/// said once and cleared when it takes writes, and then what waits is written.
@Suite struct StoreHealthTests {
    private let store = StoreParts()

    func health() -> StoreHealth {
        let store = store
        return StoreHealth(journalAtFault: { store.journal }, lockoutAtFault: { store.lockout },
                           bindingsAtFault: { store.bindings }, writeAgain: { store.writtenAgain += 1 },
                           emit: { store.events.append($0.name) })
    }

    @Test func theFaultsAreNamedInStatusOrder() {
        let health = health()
        #expect(health.faults.isEmpty)
        store.bindings = true
        store.journal = true
        #expect(health.faults == ["journal", "bindings"])
        health.becameReadOnly("/var/lib/latchkey/lock.db")
        store.lockout = true
        #expect(health.faults == ["read-only", "journal", "lockout", "bindings"])
    }

    @Test func aReadOnlyStoreIsSaidAndClearedWhenItTakesWritesAndThenWhatWaitsIsWritten() {
        let health = health()
        health.becameReadOnly("/var/lib/latchkey/lock.db")
        #expect(health.isReadOnly)
        #expect(store.events == [EventKind.lockStoreReadOnly.name])
        #expect(store.writtenAgain == 0)
        health.becameWritable("/var/lib/latchkey/lock.db")
        #expect(!health.isReadOnly)
        #expect(health.faults.isEmpty)
        #expect(store.events == [EventKind.lockStoreReadOnly.name, EventKind.lockStoreWritable.name])
        #expect(store.writtenAgain == 1)
    }
}

private final class StoreParts {
    var journal = false, lockout = false, bindings = false
    var writtenAgain = 0
    var events: [String] = []
}
