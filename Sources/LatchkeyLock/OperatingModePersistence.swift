/// Where the lock keeps its operating mode across restarts (the SQLite store's
/// `operatingMode` table in production). `save` is durable before it returns.
public protocol OperatingModeStore: AnyObject {
    /// nil when no mode was ever set (the lock starts Normal).
    func loadOperatingMode() throws -> OperatingMode?
    func saveOperatingMode(_ mode: OperatingMode) throws
}

public final class InMemoryOperatingModeStore: OperatingModeStore {
    public var mode: OperatingMode?
    public var failWrites = false
    public init(_ mode: OperatingMode? = nil) { self.mode = mode }
    public func loadOperatingMode() throws -> OperatingMode? { mode }
    public func saveOperatingMode(_ mode: OperatingMode) throws {
        if failWrites { throw WriteFailed() }
        self.mode = mode
    }
    public struct WriteFailed: Error {}
}

/// What a restarted lock does with the mode it finds (docs/RESTORATION.md, relaunch rules):
///
/// - **NoRemoteLockUnlock comes back.** It is a restriction an admin chose (a lost phone, a
///   house-sitter); a restart silently lifting it would re-open the door to remote commands
///   nobody re-allowed. Restoring it only ever refuses more.
/// - **Passage comes back as Normal, locked**, with an OperatingModeChange(passage →
///   normal, by auto) in the log. Passage holds the door unlocked; restoring it means the
///   lock unlocks by itself at start. After a crash or a power cut the fail-secure hardware
///   has already relocked the door, and whoever set Passage may be gone: a door that
///   unlocks on its own when the power comes back at 3 a.m. is the surprise a user does
///   not expect, while a door that relocked during a party is one they notice and undo
///   with one command. It is the journal's rule for unlocks (an unlock is resumed only
///   inside its validity window, never as a stored "unlocked") applied to the mode.
public enum OperatingModeRestoration {
    /// The mode to start in for a `stored` one.
    public static func modeAtStart(stored: OperatingMode?) -> OperatingMode {
        switch stored {
        case nil, .normal?, .passage?: .normal
        case .noRemoteLockUnlock?: .noRemoteLockUnlock
        }
    }
}
