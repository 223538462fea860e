import LatchkeyAgents
import LatchkeyLock
import LatchkeyManagers
import LatchkeyDaemons
import LatchkeySecurity

/// Fault injection for the lock's store: the real SQLite stores behind a switch
/// that makes every write throw what a full, broken or read-only SD card makes SQLite throw,
/// and optionally every read too.
final class FaultyStore {
    enum Fault: String { case noSpace = "database or disk is full (SQLITE_FULL, ENOSPC)"
                         case io = "disk I/O error (SQLITE_IOERR, EIO)"
                         case readOnly = "attempt to write a readonly database (SQLITE_READONLY, EROFS)" }
    struct Failure: Error, CustomStringConvertible { var fault: Fault; var description: String { fault.rawValue } }

    /// What writes fail with now; nil: the store works.
    var writes: Fault?
    /// What lockout reads fail with now; nil: they work.
    var reads: Fault?
    /// What restoration reads (the manager's state, the lock's bindings) fail with now.
    var restorationReads: Fault?
    /// Restoration identifiers a save reached the real store for.
    private(set) var saved: [String] = []

    func write() throws { if let writes { throw Failure(fault: writes) } }
    func read() throws { if let reads { throw Failure(fault: reads) } }
    func readRestoration() throws { if let restorationReads { throw Failure(fault: restorationReads) } }

    /// `stores` with their journal, lockout counts and restoration storage behind the switch,
    /// and every write of the SQLite store under them too (the keys' counters, the log).
    func wrap(_ stores: LockStores) -> LockStores {
        stores.store?.injectedWriteFault = { [unowned self] in
            self.writes.map { .database(path: stores.store!.path, message: $0.rawValue) }
        }
        var wrapped = stores
        wrapped.journal = Journal(stores.journal, self)
        wrapped.lockout = Lockout(stores.lockout, self)
        wrapped.restoration = stores.restoration.map { Restoration($0, self) }
        return wrapped
    }

    final class Journal: DecisionJournal {
        let inner: any DecisionJournal
        let store: FaultyStore
        init(_ inner: any DecisionJournal, _ store: FaultyStore) { self.inner = inner; self.store = store }
        func record(_ decision: LockDecision) throws { try store.write(); try inner.record(decision) }
        func complete(_ id: DecisionID, outcome: DecisionOutcome) throws {
            try store.write()
            try inner.complete(id, outcome: outcome)
        }
        func writeHeld() throws { try store.write(); try inner.writeHeld() }
    }

    final class Lockout: LockoutStore {
        let inner: any LockoutStore
        let store: FaultyStore
        init(_ inner: any LockoutStore, _ store: FaultyStore) { self.inner = inner; self.store = store }
        func state(of principal: LockoutPrincipal) throws -> LockoutState { try store.read(); return try inner.state(of: principal) }
        func save(_ state: LockoutState, of principal: LockoutPrincipal) throws {
            try store.write()
            try inner.save(state, of: principal)
        }
    }

    final class Restoration: RestorationStorage {
        let inner: any RestorationStorage
        let store: FaultyStore
        init(_ inner: any RestorationStorage, _ store: FaultyStore) { self.inner = inner; self.store = store }
        func load<State: PreservedState>(_ type: State.Type, identifier: String) throws -> State? {
            try store.readRestoration()
            return try inner.load(type, identifier: identifier)
        }
        func save<State: PreservedState>(_ state: State, identifier: String) throws {
            try store.write()
            store.saved.append(identifier)
            try inner.save(state, identifier: identifier)
        }
        func remove(_ role: RestorationRole, identifier: String) throws {
            try store.write()
            try inner.remove(role, identifier: identifier)
        }
        func identifiers(_ role: RestorationRole) throws -> [String] { try store.readRestoration(); return try inner.identifiers(role) }
    }
}
