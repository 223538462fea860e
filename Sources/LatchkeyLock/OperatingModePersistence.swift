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

/// What a restarted lock does with the mode it finds. NoRemoteLockUnlock comes back: an admin's
/// restriction a restart must not lift. Passage comes back as Normal, locked, logged as an
/// OperatingModeChange by the lock itself: restoring it would unlock the door by itself at
/// start, after the fail-secure hardware relocked it and whoever set it may be gone. It is the
/// journal's rule for unlocks applied to the mode. docs/RESTORATION.md, "The operating mode
/// across a restart".
public enum OperatingModeRestoration {
    /// The mode to start in for a `stored` one.
    public static func modeAtStart(stored: OperatingMode?) -> OperatingMode {
        switch stored {
        case nil, .normal?, .passage?: .normal
        case .noRemoteLockUnlock?: .noRemoteLockUnlock
        }
    }
}
