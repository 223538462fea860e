import LatchkeyEvents

/// What `status` says is at fault in the lock's store: a store open read-only, a journal whose
/// writes failed or wait, lockout or bindings that could not be saved. A store that cannot be
/// written fails safe and loud; once it takes writes again, what waits is written (`writeAgain`).
final class StoreHealth {
    private let journalAtFault: () -> Bool
    private let lockoutAtFault: () -> Bool
    private let bindingsAtFault: () -> Bool
    private let writeAgain: () -> Void
    private let emit: (Event) -> Void
    /// The store is open read-only.
    private var readOnly = false

    init(journalAtFault: @escaping () -> Bool, lockoutAtFault: @escaping () -> Bool,
         bindingsAtFault: @escaping () -> Bool, writeAgain: @escaping () -> Void, emit: @escaping (Event) -> Void) {
        self.journalAtFault = journalAtFault
        self.lockoutAtFault = lockoutAtFault
        self.bindingsAtFault = bindingsAtFault
        self.writeAgain = writeAgain
        self.emit = emit
    }

    var isReadOnly: Bool { readOnly }

    /// The parts of the store at fault now, in the order `status` names them; empty when all
    /// is on disk.
    var faults: [String] {
        var faults: [String] = readOnly ? ["read-only"] : []
        if journalAtFault() { faults.append("journal") }
        if lockoutAtFault() { faults.append("lockout") }
        if bindingsAtFault() { faults.append("bindings") }
        return faults
    }

    func becameReadOnly(_ path: String) {
        readOnly = true
        emit(.lockStoreReadOnly(store: path, effect: "lock only; unlock refused until the store takes writes"))
    }

    func becameWritable(_ path: String) {
        readOnly = false
        emit(.lockStoreWritable(store: path))
        writeAgain()
    }
}
