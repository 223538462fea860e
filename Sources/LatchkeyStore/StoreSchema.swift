import LatchkeySQLite

/// The schema, as an ordered list of migrations. A migration, once shipped, never changes:
/// a new need is a new migration appended here. Integers that are UInt64 in Swift
/// (decision ids, counters) are stored as their Int64 bit pattern; times are Int64
/// nanoseconds (monotonic ones as the loop gave them, wall ones since the Unix epoch).
enum StoreSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: journal, log, keys, phone state, restoration") { db in
            // Values that must outlive the rows they came from (the highest decision id).
            try db.execute(sql: """
                CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) STRICT
                """)
            try db.execute(sql: """
                CREATE TABLE decision (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT,
                  id INTEGER NOT NULL UNIQUE,
                  operation INTEGER NOT NULL,
                  source INTEGER NOT NULL,
                  who INTEGER,
                  decidedAtNanos INTEGER NOT NULL,
                  deadlineNanos INTEGER NOT NULL,
                  relockAfterNanos INTEGER,
                  recordedWallNanos INTEGER NOT NULL,
                  decidedWallNanos INTEGER NOT NULL,
                  deadlineWallNanos INTEGER NOT NULL,
                  outcome INTEGER,
                  completedWallNanos INTEGER
                ) STRICT
                """)
            try db.execute(sql: "CREATE INDEX decisionOpen ON decision(seq) WHERE outcome IS NULL")
            try db.execute(sql: """
                CREATE TABLE event (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT,
                  wallNanos INTEGER NOT NULL,
                  bytes BLOB NOT NULL
                ) STRICT
                """)
            try db.execute(sql: """
                CREATE TABLE phoneKey (
                  id INTEGER PRIMARY KEY NOT NULL,
                  name TEXT NOT NULL,
                  secret BLOB NOT NULL CHECK (length(secret) = 32),
                  role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
                  mayRequestArrivalUnlock INTEGER NOT NULL,
                  revoked INTEGER NOT NULL DEFAULT 0,
                  createdWallNanos INTEGER NOT NULL,
                  revokedWallNanos INTEGER,
                  lastCounter INTEGER NOT NULL DEFAULT 0
                ) STRICT
                """)
            try db.execute(sql: """
                CREATE TABLE phoneState (
                  singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
                  json BLOB NOT NULL,
                  savedWallNanos INTEGER NOT NULL
                ) STRICT
                """)
            try db.execute(sql: """
                CREATE TABLE restoration (
                  role TEXT NOT NULL CHECK (role IN ('central', 'peripheral')),
                  identifier TEXT NOT NULL,
                  version INTEGER NOT NULL,
                  payload BLOB NOT NULL,
                  updatedWallNanos INTEGER NOT NULL,
                  PRIMARY KEY (role, identifier)
                ) STRICT
                """)
        }
        migrator.registerMigration("v2: lockout, lock identity") { db in
            // Failed-attempt counts (docs/SECURITY.md, "Lockout"). principal: a key id, or -1
            // for the overall count. Instants both as the writing process's loop gave them
            // and on the wall clock, with the writer's token: see `LockoutTimeRule`.
            try db.execute(sql: """
                CREATE TABLE lockout (
                  principal INTEGER PRIMARY KEY NOT NULL CHECK (principal >= -1),
                  failures INTEGER NOT NULL CHECK (failures >= 0),
                  level INTEGER NOT NULL CHECK (level >= 0),
                  lockedUntilNanos INTEGER,
                  lastFailureNanos INTEGER,
                  lockedUntilWallNanos INTEGER,
                  lastFailureWallNanos INTEGER,
                  recordedWallNanos INTEGER NOT NULL,
                  process INTEGER NOT NULL
                ) STRICT
                """)
            // The lock's long-term X25519 identity, created on first use (pairing).
            try db.execute(sql: """
                CREATE TABLE lockIdentity (
                  singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
                  privateKey BLOB NOT NULL CHECK (length(privateKey) = 32),
                  createdWallNanos INTEGER NOT NULL
                ) STRICT
                """)
        }
        migrator.registerMigration("v3: operating mode") { db in
            // The lock's OperatingMode across restarts (`StoredOperatingMode`).
            try db.execute(sql: StoredOperatingMode.createTable)
        }
        migrator.registerMigration("v4: arrival unlock is an admin's opt-in") { db in
            // Arrival unlock used to be on for every new key. A user (guest) key can never
            // have it now, so its flag goes; an admin key keeps what it has (its phone still
            // asks only inside an arrival-intent window: docs/SECURITY.md, "Arrival unlock").
            try db.execute(sql: "UPDATE phoneKey SET mayRequestArrivalUnlock = 0 WHERE role = 'user'")
        }
        migrator.registerMigration("v5: a decision's id is its row id") { db in
            // The commit in front of the motor wrote 7 WAL pages: the row, its
            // AUTOINCREMENT counter in sqlite_sequence, the UNIQUE index on id, the open-
            // decisions index, the highest id in meta, and the key's counter. Ids strictly
            // increase (`StoredDecisionJournal`), so the id itself orders the rows: as the
            // INTEGER PRIMARY KEY it needs neither a sequence nor an index of its own, and the
            // highest id is the last row's (meta keeps it at completion, off that path). Left:
            // the row, the open index and the key's counter, 3 pages.
            try db.execute(sql: """
                CREATE TABLE decisionByID (
                  id INTEGER PRIMARY KEY NOT NULL,
                  operation INTEGER NOT NULL,
                  source INTEGER NOT NULL,
                  who INTEGER,
                  decidedAtNanos INTEGER NOT NULL,
                  deadlineNanos INTEGER NOT NULL,
                  relockAfterNanos INTEGER,
                  recordedWallNanos INTEGER NOT NULL,
                  decidedWallNanos INTEGER NOT NULL,
                  deadlineWallNanos INTEGER NOT NULL,
                  outcome INTEGER,
                  completedWallNanos INTEGER
                ) STRICT
                """)
            try db.execute(sql: """
                INSERT INTO decisionByID (id, operation, source, who, decidedAtNanos, deadlineNanos, relockAfterNanos,
                                          recordedWallNanos, decidedWallNanos, deadlineWallNanos, outcome, completedWallNanos)
                SELECT id, operation, source, who, decidedAtNanos, deadlineNanos, relockAfterNanos,
                       recordedWallNanos, decidedWallNanos, deadlineWallNanos, outcome, completedWallNanos
                FROM decision ORDER BY seq
                """)
            // meta already holds the highest id: v1-v4 wrote it with every decision.
            try db.execute(sql: "DROP TABLE decision")  // its indexes and sqlite_sequence row with it
            try db.execute(sql: "ALTER TABLE decisionByID RENAME TO decision")
            try db.execute(sql: "CREATE INDEX decisionOpen ON decision(id) WHERE outcome IS NULL")
        }
        return migrator
    }
}
