import FoundationEssentials
import LatchkeySQLite
import LatchkeySecurity
import LatchkeyTransport

/// The lock's failed-attempt counts on disk (docs/LOCK-RULES.md rule 5: persisted across
/// restarts). `save` is committed (WAL, synchronous=FULL) before it returns, so the answer
/// to a failed command never goes out before its count is durable. Times per
/// `LockoutTimeRule`; a row written by an earlier process is rebased once, at its first
/// read, and written back under this process's token.
public final class StoredLockoutStore: LockoutStore {
    private let store: AgentStore
    private let monotonicNow: () -> Instant
    /// This process's token: tells our own rows from those an earlier process wrote.
    private let process = Int64.random(in: .min ... .max)
    static let overallPrincipal: Int64 = -1

    init(store: AgentStore, monotonicNow: @escaping () -> Instant) {
        self.store = store
        self.monotonicNow = monotonicNow
    }

    static func column(_ principal: LockoutPrincipal) -> Int64 {
        switch principal {
        case .overall: overallPrincipal
        case .key(let id): Int64(id)
        }
    }

    public func state(of principal: LockoutPrincipal) throws(StoreError) -> LockoutState {
        let key = Self.column(principal)
        let path = store.path
        let ours = process
        let row = try store.read { db in try Row.fetchOne(db, sql: "SELECT * FROM lockout WHERE principal = ?",
                                                          arguments: [key]) }
        guard let row else { return .clean }
        let (state, writer) = try Self.decode(row, path: path)
        if writer == ours { return state }
        let wall = LockoutTimeRule.WallTimes(lockedUntil: row["lockedUntilWallNanos"],
                                             lastFailure: row["lastFailureWallNanos"], recorded: row["recordedWallNanos"])
        let (lockedUntil, lastFailure) = LockoutTimeRule.rebase(wall, wallNow: store.wallClock.nanosecondsSinceEpoch(),
                                                                monotonicNow: monotonicNow())
        var rebased = state
        rebased.lockedUntil = lockedUntil
        rebased.lastFailure = lastFailure
        try save(rebased, of: principal)
        return rebased
    }

    public func save(_ state: LockoutState, of principal: LockoutPrincipal) throws(StoreError) {
        let wallNow = store.wallClock.nanosecondsSinceEpoch()
        let wall = LockoutTimeRule.wallTimes(lockedUntil: state.lockedUntil, lastFailure: state.lastFailure,
                                             wallNow: wallNow, monotonicNow: monotonicNow())
        let key = Self.column(principal)
        let process = process
        try store.write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO lockout (principal, failures, level, lockedUntilNanos, lastFailureNanos,
                                                lockedUntilWallNanos, lastFailureWallNanos, recordedWallNanos, process)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [key, Int64(state.failures), Int64(state.level), state.lockedUntil?.nanoseconds,
                                 state.lastFailure?.nanoseconds, wall.lockedUntil, wall.lastFailure, wall.recorded,
                                 process])
        }
    }

    /// Every principal with a row, for `latchkey keys list` and diagnostics.
    public func all() throws(StoreError) -> [(principal: LockoutPrincipal, state: LockoutState)] {
        let path = store.path
        let rows = try store.read { db in try Row.fetchAll(db, sql: "SELECT principal FROM lockout ORDER BY principal") }
        var out: [(LockoutPrincipal, LockoutState)] = []
        for row in rows {
            let p: Int64 = row["principal"]
            guard p == Self.overallPrincipal || UInt32(exactly: p) != nil else {
                throw StoreError.undecodable(path: path, what: "lockout principal \(p)")
            }
            let principal: LockoutPrincipal = p == Self.overallPrincipal ? .overall : .key(UInt32(p))
            out.append((principal, try state(of: principal)))
        }
        return out
    }

    private static func decode(_ row: Row, path: String) throws(StoreError) -> (LockoutState, Int64) {
        let failures: Int64 = row["failures"], level: Int64 = row["level"]
        guard let f = UInt32(exactly: failures), let l = UInt32(exactly: level) else {
            throw .undecodable(path: path, what: "lockout row \(row["principal"] as Int64? ?? -2)")
        }
        let until: Int64? = row["lockedUntilNanos"], last: Int64? = row["lastFailureNanos"]
        return (LockoutState(failures: f, level: l, lockedUntil: until.map { Instant(nanoseconds: $0) },
                             lastFailure: last.map { Instant(nanoseconds: $0) }), row["process"])
    }
}

extension AgentStore {
    /// The lock's long-term identity key (pairing), created with `create` on first use and
    /// kept in the 0600 database in the 0700 state directory.
    public func lockIdentity(create: () -> [UInt8]) throws(StoreError) -> [UInt8] {
        let now = wallClock.nanosecondsSinceEpoch()
        let path = path
        // Read first: a store open read-only (a read-only card) still has its identity.
        let existing = try read { db in try Data.fetchOne(db, sql: "SELECT privateKey FROM lockIdentity WHERE singleton = 1") }
        if let existing { return [UInt8](existing) }
        return try write { db in
            if let existing = try Data.fetchOne(db, sql: "SELECT privateKey FROM lockIdentity WHERE singleton = 1") {
                return [UInt8](existing)
            }
            let fresh = create()
            guard fresh.count == 32 else { throw StoreError.rejected(path: path, reason: "an identity key is 32 octets") }
            try db.execute(sql: "INSERT INTO lockIdentity (singleton, privateKey, createdWallNanos) VALUES (1, ?, ?)",
                           arguments: [Data(fresh), now])
            return fresh
        }
    }
}
