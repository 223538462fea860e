/// A store that cannot be written (a full or read-only SD card, an I/O error) fails safe and
/// loud: no unlock without its record (the controller), lockout that cannot be saved
/// refuses every command but `lock` (`LockoutGuard`), bindings that cannot be read are not saved over;
/// `status` names what is at fault until the store takes writes again (`StoreHealth`).
extension LockAgent {
    /// The parts of the store at fault now: "read-only" (the lock runs on a store it could
    /// open only read-only: `storeIsReadOnly`), "journal" (its last write failed, or writes wait:
    /// a lock moved without its record), "lockout", "bindings"; empty when all is on disk.
    public var storeFaults: [String] { parts.storeHealth.faults }

    /// The store is open read-only (`storeIsReadOnly`) until it takes writes again.
    public var storeOpenReadOnly: Bool { parts.storeHealth.isReadOnly }

    /// The store could be opened only read-only (its file system is: a card gone read-only).
    /// The lock runs degraded: a lock moves and waits to be recorded, an unlock and anything
    /// else needing a durable write is refused (`storageFailure`); said once, as a warning,
    /// and in `status` until `storeBecameWritable`.
    public func storeIsReadOnly(_ path: String) { parts.storeHealth.becameReadOnly(path) }

    /// The store is open read-write again: what waits is written now, the journal's backlog
    /// and the bindings of the links up.
    public func storeBecameWritable(_ path: String) { parts.storeHealth.becameWritable(path) }
}
