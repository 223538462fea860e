import FoundationEssentials
import LatchkeySQLite
import LatchkeySecurity

/// A phone key as the store holds it, with its bookkeeping.
public struct StoredKey: Equatable, Sendable {
    public var key: PhoneKey
    /// When it was added (wall clock, nanoseconds since the Unix epoch).
    public var createdWallNanos: Int64
    public var revokedWallNanos: Int64?
    /// The last command counter accepted from this key.
    public var lastCounter: UInt64
}

/// The lock's phone keys and their counters (docs/LOCK-RULES.md rules 1–3, 7).
/// `recordCounter` is durable before it returns (a counter lost in a crash would let the
/// last command be replayed) and only moves forward. The `KeyStore` reads cannot throw, so
/// they fail closed: a key that cannot be read is unknown, a counter that cannot be read is
/// `UInt64.max` (every command looks replayed); the error is kept in `lastReadError`.
///
/// Keys are read from the file at every use, so a `latchkey keys revoke` run by another
/// process takes effect at the next command.
public final class StoredKeyStore: KeyRegistry {
    private let store: AgentStore
    /// The last error a non-throwing read swallowed, for the agent's log.
    public private(set) var lastReadError: StoreError?

    init(store: AgentStore) { self.store = store }

    // MARK: KeyStore

    public func key(id: UInt32) -> PhoneKey? {
        do throws(StoreError) { return try stored(id: id)?.key } catch {
            lastReadError = error
            return nil
        }
    }

    public func lookUp(id: UInt32) -> Result<PhoneKey?, any Error> {
        do throws(StoreError) { return .success(try stored(id: id)?.key) } catch {
            lastReadError = error
            return .failure(error)
        }
    }

    public func lastCounter(keyID: UInt32) -> UInt64 {
        do throws(StoreError) { return try stored(id: keyID)?.lastCounter ?? 0 } catch {
            lastReadError = error
            return .max
        }
    }

    public func recordCounter(_ counter: UInt64, keyID: UInt32) throws(StoreError) {
        try store.write { db in try recordCounter(counter, keyID: keyID, in: db) }
    }

    /// The counter write inside a transaction of the caller's (`StoredLockRecords` commits a
    /// staged counter with the decision its command led to).
    func recordCounter(_ counter: UInt64, keyID: UInt32, in db: Database) throws {
        guard let last = try Int64.fetchOne(db, sql: "SELECT lastCounter FROM phoneKey WHERE id = ?",
                                            arguments: [keyID]) else {
            throw StoreError.rejected(path: store.path, reason: "no key \(keyID)")
        }
        guard counter > UInt64(bitPattern: last) else {
            throw StoreError.rejected(path: store.path, reason: "counter \(counter) of key \(keyID) does not advance")
        }
        try db.execute(sql: "UPDATE phoneKey SET lastCounter = ? WHERE id = ?",
                       arguments: [Int64(bitPattern: counter), keyID])
    }

    /// Raises a key's counter to `counter` unless it is there already (a counter held in
    /// memory while the store refused writes: `StoredLockRecords.heldCounters`). Never lowers
    /// it, and a key removed meanwhile is nothing to write.
    func raiseCounter(to counter: UInt64, keyID: UInt32, in db: Database) throws {
        guard let last = try Int64.fetchOne(db, sql: "SELECT lastCounter FROM phoneKey WHERE id = ?", arguments: [keyID]),
              counter > UInt64(bitPattern: last) else { return }
        try db.execute(sql: "UPDATE phoneKey SET lastCounter = ? WHERE id = ?", arguments: [Int64(bitPattern: counter), keyID])
    }

    // MARK: Management (the `latchkey keys` commands)

    /// Adds a key; its id must be new (a revoked key's id stays taken, so that old
    /// commands signed with it can never match a new key).
    public func add(_ key: PhoneKey) throws(StoreError) {
        let now = store.wallClock.nanosecondsSinceEpoch()
        let path = store.path
        if let refusal = arrivalUnlockRefusal(role: key.role, arrival: key.mayRequestArrivalUnlock) {
            throw StoreError.rejected(path: path, reason: refusal)
        }
        try store.write { db in
            guard try Int.fetchOne(db, sql: "SELECT count(*) FROM phoneKey WHERE id = ?", arguments: [key.id]) == 0 else {
                throw StoreError.rejected(path: path, reason: "key \(key.id) already exists")
            }
            try db.execute(sql: """
                INSERT INTO phoneKey (id, name, secret, role, mayRequestArrivalUnlock, revoked, createdWallNanos,
                                      revokedWallNanos)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [key.id, key.name, Data(key.secret), key.role.rawValue, key.mayRequestArrivalUnlock,
                                 key.revoked, now, key.revoked ? now : nil])
        }
    }

    /// Revokes key `id` at once. Revoking a revoked key changes nothing.
    public func revoke(id: UInt32) throws(StoreError) {
        let now = store.wallClock.nanosecondsSinceEpoch()
        let path = store.path
        try store.write { db in
            guard try Int.fetchOne(db, sql: "SELECT count(*) FROM phoneKey WHERE id = ?", arguments: [id]) == 1 else {
                throw StoreError.rejected(path: path, reason: "no key \(id)")
            }
            try db.execute(sql: "UPDATE phoneKey SET revoked = 1, revokedWallNanos = ? WHERE id = ? AND revoked = 0",
                           arguments: [now, id])
        }
    }

    /// Every key, revoked ones included, by id.
    public func list() throws(StoreError) -> [StoredKey] {
        let path = store.path
        return try store.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM phoneKey ORDER BY id").map { try Self.decode($0, path: path) }
        }
    }

    /// The smallest id above every key ever added: what `latchkey keys add` proposes.
    public func nextID() throws(StoreError) -> UInt32 {
        let highest = try store.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM phoneKey") }
        return UInt32(clamping: (highest ?? 0) + 1)
    }

    public func stored(id: UInt32) throws(StoreError) -> StoredKey? {
        let path = store.path
        return try store.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM phoneKey WHERE id = ?", arguments: [id])
                .map { try Self.decode($0, path: path) }
        }
    }

    private static func decode(_ row: Row, path: String) throws -> StoredKey {
        let id: Int64 = try row.decode(forColumn: "id")
        let secret: Data = try row.decode(forColumn: "secret")
        guard let id32 = UInt32(exactly: id), secret.count == 32,
              let role = KeyRole(rawValue: try row.decode(forColumn: "role")) else {
            throw StoreError.undecodable(path: path, what: "key \(id)")
        }
        let key = PhoneKey(id: id32, name: try row.decode(forColumn: "name"), secret: [UInt8](secret), role: role,
                           mayRequestArrivalUnlock: try row.decode(forColumn: "mayRequestArrivalUnlock"),
                           revoked: try row.decode(forColumn: "revoked"))
        return StoredKey(key: key, createdWallNanos: try row.decode(forColumn: "createdWallNanos"),
                         revokedWallNanos: try row.decode(forColumn: "revokedWallNanos"),
                         lastCounter: UInt64(bitPattern: try row.decode(forColumn: "lastCounter")))
    }
}
