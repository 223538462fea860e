import FoundationEssentials
import LatchkeySQLite

/// Which kind of manager a restoration entry belongs to (a central manager preserves
/// its scans, connections and subscriptions; a peripheral manager its advertising,
/// services and subscribed centrals).
public enum ManagerRole: String, Hashable, Sendable, CaseIterable {
    case central
    case peripheral
}

/// What one manager preserved, under its restore identifier. The payload is the manager's
/// own encoding; the store only keeps it and its version, so that a manager can refuse (or
/// upgrade) a payload written by an older encoding instead of misreading it.
public struct RestorationEntry: Hashable, Sendable {
    public var role: ManagerRole
    /// The manager's restore identifier (Core Bluetooth's
    /// CBCentralManagerOptionRestoreIdentifierKey): unique per manager and role.
    public var identifier: String
    /// The payload's encoding version, chosen by the manager.
    public var version: UInt32
    public var payload: [UInt8]
    /// When it was last written (wall clock, nanoseconds since the Unix epoch); set by `put`.
    public var updatedWallNanos: Int64

    public init(role: ManagerRole, identifier: String, version: UInt32, payload: [UInt8], updatedWallNanos: Int64 = 0) {
        self.role = role
        self.identifier = identifier
        self.version = version
        self.payload = payload
        self.updatedWallNanos = updatedWallNanos
    }
}

/// Restoration entries keyed by (role, restore identifier) — restoration's step 1. An agent may hold
/// several managers, each with its own identifier; on relaunch, `list` says which managers
/// had preserved work to hand back (step 2). Every write is durable when it returns.
public final class RestorationStore {
    private let store: AgentStore

    init(store: AgentStore) { self.store = store }

    /// Stores `entry`, replacing the one with the same role and identifier.
    public func put(_ entry: RestorationEntry) throws(StoreError) {
        let now = store.wallClock.nanosecondsSinceEpoch()
        try store.write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO restoration (role, identifier, version, payload, updatedWallNanos)
                VALUES (?, ?, ?, ?, ?)
                """, arguments: [entry.role.rawValue, entry.identifier, entry.version, Data(entry.payload), now])
        }
    }

    public func get(_ role: ManagerRole, identifier: String) throws(StoreError) -> RestorationEntry? {
        try fetch(sql: "SELECT * FROM restoration WHERE role = ? AND identifier = ?",
                  arguments: [role.rawValue, identifier]).first
    }

    /// Removes the entry (a manager that no longer has Bluetooth work pending). Returns
    /// whether there was one.
    @discardableResult
    public func remove(_ role: ManagerRole, identifier: String) throws(StoreError) -> Bool {
        try store.write { db in
            try db.execute(sql: "DELETE FROM restoration WHERE role = ? AND identifier = ?",
                           arguments: [role.rawValue, identifier])
            return db.changesCount > 0
        }
    }

    /// Every entry, or those of one role, ordered by role then identifier.
    public func list(_ role: ManagerRole? = nil) throws(StoreError) -> [RestorationEntry] {
        if let role {
            return try fetch(sql: "SELECT * FROM restoration WHERE role = ? ORDER BY identifier", arguments: [role.rawValue])
        }
        return try fetch(sql: "SELECT * FROM restoration ORDER BY role, identifier", arguments: [])
    }

    private func fetch(sql: String, arguments: StatementArguments) throws(StoreError) -> [RestorationEntry] {
        let path = store.path
        return try store.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                let identifier: String = try row.decode(forColumn: "identifier")
                let version: Int64 = try row.decode(forColumn: "version")
                guard let role = ManagerRole(rawValue: try row.decode(forColumn: "role")),
                      let version32 = UInt32(exactly: version) else {
                    throw StoreError.undecodable(path: path, what: "restoration entry \(identifier)")
                }
                let payload: Data = try row.decode(forColumn: "payload")
                return RestorationEntry(role: role, identifier: identifier, version: version32, payload: [UInt8](payload),
                                        updatedWallNanos: try row.decode(forColumn: "updatedWallNanos"))
            }
        }
    }
}
