import FoundationEssentials
import LatchkeySQLite
import LatchkeyPhone

/// The phone agent's `PhoneState` (presence, answered cycle, command counter) as one row of
/// JSON, replaced whole at each `save` and durable when it returns. JSON because the state
/// is small, Codable, and readable with the sqlite3 shell when a phone misbehaves.
public final class StoredPhoneStateStore: PhoneStateStore {
    private let store: AgentStore

    init(store: AgentStore) { self.store = store }

    public func load() throws(StoreError) -> PhoneState? {
        let json = try store.read { db in try Data.fetchOne(db, sql: "SELECT json FROM phoneState WHERE singleton = 1") }
        guard let json else { return nil }
        do { return try JSONDecoder().decode(PhoneState.self, from: json) } catch {
            throw StoreError.undecodable(path: store.path, what: "phone state: \(error)")
        }
    }

    public func save(_ state: PhoneState) throws(StoreError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json: Data
        do { json = try encoder.encode(state) } catch {
            throw .rejected(path: store.path, reason: "cannot encode the phone state: \(error)")
        }
        let now = store.wallClock.nanosecondsSinceEpoch()
        try store.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO phoneState (singleton, json, savedWallNanos) VALUES (1, ?, ?)",
                           arguments: [json, now])
        }
    }
}
