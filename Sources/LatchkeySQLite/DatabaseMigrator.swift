/// An ordered list of schema migrations, each applied once, in its own transaction, and
/// recorded by identifier.
///
/// The record is GRDB's table, `grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)`, kept
/// as it is: stores written while the store used GRDB open with their history intact, and a
/// store written by this code opens with GRDB too.
public struct DatabaseMigrator {
    private var registered: [(identifier: String, migrate: (Database) throws -> Void)] = []

    public init() {}

    /// Appends a migration. Once shipped, a migration never changes: a new need is a new one.
    public mutating func registerMigration(_ identifier: String, migrate: @escaping (Database) throws -> Void) {
        precondition(!migrations.contains(identifier), "migration '\(identifier)' registered twice")
        registered.append((identifier, migrate))
    }

    /// The identifiers, in order.
    public var migrations: [String] { registered.map(\.identifier) }

    /// The migrations up to and including `identifier`: a file as the release that shipped
    /// it wrote it, for the tests of the migrations after it.
    public func prefix(through identifier: String) -> DatabaseMigrator {
        guard let last = registered.firstIndex(where: { $0.identifier == identifier }) else {
            preconditionFailure("no migration '\(identifier)'")
        }
        var older = DatabaseMigrator()
        older.registered = Array(registered[...last])
        return older
    }

    /// The identifiers recorded in `db`, known or not (empty for a new file).
    public func appliedIdentifiers(_ db: Database) throws -> Set<String> {
        let exists = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
                                      arguments: [Self.table]) ?? 0
        guard exists > 0 else { return [] }
        return Set(try String.fetchAll(db, sql: "SELECT identifier FROM \(Self.table)"))
    }

    /// Applies the migrations not in `applied` (what `appliedIdentifiers` returned), in order,
    /// each in an immediate transaction that also records it. Each is looked up again inside
    /// its transaction: another process opening the same new file may have applied it since.
    public func migrate(_ db: Database, applied: Set<String>) throws {
        let pending = registered.filter { !applied.contains($0.identifier) }
        guard !pending.isEmpty else { return }
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(Self.table) (identifier TEXT NOT NULL PRIMARY KEY)")
        for migration in pending {
            try db.inTransaction(.immediate) { db in
                let done = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(Self.table) WHERE identifier = ?",
                                            arguments: [migration.identifier]) ?? 0
                guard done == 0 else { return }
                try migration.migrate(db)
                try db.execute(sql: "INSERT INTO \(Self.table) (identifier) VALUES (?)", arguments: [migration.identifier])
            }
        }
    }

    static let table = "grdb_migrations"
}
