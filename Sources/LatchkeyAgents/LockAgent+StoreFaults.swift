/// A store that cannot be written (a full or read-only SD card, an I/O error) fails safe and
/// loud: no unlock without its record (the controller), lockout that cannot be saved
/// refuses every command but `lock` (`LockoutGuard`), bindings that cannot be read are not saved over;
/// `status` names what is at fault until the store takes writes again.
extension LockAgent {
    /// The parts of the store at fault now: "journal" (its last write failed, or writes wait:
    /// a lock moved without its record), "lockout", "bindings"; empty when all is on disk.
    public var storeFaults: [String] {
        var faults: [String] = []
        if controller.journalFault != nil || controller.unwrittenJournalEntries > 0 { faults.append("journal") }
        if verifier.lockout.storeFault != nil { faults.append("lockout") }
        if bindingsFault != nil { faults.append("bindings") }
        return faults
    }
}
