import LatchkeySQLite
import Testing

struct DatabaseMigratorTests {
    static func migrator(runs: Counter) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            runs.count += 1
            try db.execute(sql: "CREATE TABLE a (v INTEGER)")
        }
        migrator.registerMigration("v2") { db in
            runs.count += 1
            try db.execute(sql: "CREATE TABLE b (v INTEGER)")
        }
        return migrator
    }

    final class Counter { var count = 0 }

    @Test func eachMigrationRunsOnceAndIsRecordedInGRDBsTable() throws {
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        let runs = Counter()
        let migrator = Self.migrator(runs: runs)
        #expect(migrator.migrations == ["v1", "v2"])
        #expect(try migrator.appliedIdentifiers(db).isEmpty)
        try migrator.migrate(db, applied: [])
        #expect(runs.count == 2)
        #expect(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") == ["v1", "v2"])
        try migrator.migrate(db, applied: try migrator.appliedIdentifiers(db))
        #expect(runs.count == 2)
        // A stale `applied` (another process migrated meanwhile) is checked again inside each
        // migration's transaction.
        try migrator.migrate(db, applied: [])
        #expect(runs.count == 2)
    }

    @Test func aFailingMigrationLeavesNoTraceAndStopsTheRest() throws {
        struct Broken: Error {}
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: "CREATE TABLE a (v INTEGER)")
            throw Broken()
        }
        migrator.registerMigration("v2") { db in try db.execute(sql: "CREATE TABLE b (v INTEGER)") }
        #expect(throws: Broken.self) { try migrator.migrate(db, applied: []) }
        #expect(try migrator.appliedIdentifiers(db).isEmpty)
        #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name IN ('a', 'b')") == 0)
    }

    @Test func unknownIdentifiersAreReportedAsApplied() throws {
        let scratch = ScratchDatabase()
        let db = try scratch.open()
        let migrator = Self.migrator(runs: Counter())
        try migrator.migrate(db, applied: [])
        try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v9')")
        #expect(try migrator.appliedIdentifiers(db).subtracting(migrator.migrations) == ["v9"])
    }
}
