import LatchkeySQLite
import LatchkeyLock

/// The lock's operating mode on disk, one row (migration "v3: operating mode"). `save` is
/// committed before it returns; `OperatingModeRestoration` decides what a start makes of it.
public final class StoredOperatingMode: OperatingModeStore {
    /// The table, as the migration creates it. Any UInt8 is stored: a mode this version does
    /// not know (written by a newer one) is undecodable, and the lock starts Normal.
    static let createTable = """
        CREATE TABLE operatingMode (
          singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
          mode INTEGER NOT NULL CHECK (mode BETWEEN 0 AND 255),
          changedWallNanos INTEGER NOT NULL
        ) STRICT
        """

    private let store: AgentStore

    init(store: AgentStore) { self.store = store }

    public func loadOperatingMode() throws(StoreError) -> OperatingMode? {
        let path = store.path
        let raw = try store.read { db in
            try Int64.fetchOne(db, sql: "SELECT mode FROM operatingMode WHERE singleton = 1")
        }
        guard let raw else { return nil }
        guard let mode = UInt8(exactly: raw).flatMap(OperatingMode.init(rawValue:)) else {
            throw StoreError.undecodable(path: path, what: "operating mode \(raw)")
        }
        return mode
    }

    public func saveOperatingMode(_ mode: OperatingMode) throws(StoreError) {
        let now = store.wallClock.nanosecondsSinceEpoch()
        try store.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO operatingMode (singleton, mode, changedWallNanos) VALUES (1, ?, ?)",
                           arguments: [Int64(mode.rawValue), now])
        }
    }
}

extension AgentStore {
    public func operatingModeStore() -> StoredOperatingMode { StoredOperatingMode(store: self) }
}
