import LatchkeyLock

/// Decisions whose commit the disk refused and the store could not supersede: a card gone
/// read-only between a commit's write and its sync keeps the commit's frames in the kernel's
/// page cache, and the next lock process on the same boot would read the decision back as
/// interrupted and resume it (`AgentStore.supersedeFailedCommit`). The ledger is kept where
/// the page cache's lifetime is also the file's: a tmpfs directory (the packaged lock's
/// runtime directory, `/run/latchkey/lock`), so it outlives a restart and not a reboot.
public struct RefusedCommitLedger: Sendable {
    /// The ledger's file: `<directory>/refused-decisions`.
    public let path: String

    public init(directory: String) { path = directory + "/refused-decisions" }

    /// Remembers `id`; throws when the file cannot be written (the caller says so).
    public func add(_ id: DecisionID) throws(StoreError) {
        try StoreFiles.appendLine(String(id.rawValue), to: path)
    }

    /// Whether `id` is in the ledger. An unreadable ledger answers every id: a lock that
    /// cannot tell whether an unlock was refused does not resume it.
    public func contains(_ id: DecisionID) -> Bool {
        guard let lines = try? StoreFiles.lines(of: path) else { return true }  // unreadable: refuse to resume
        return lines.contains { UInt64($0) == id.rawValue }
    }
}
