import LatchkeyAgents
import LatchkeyLock
import LatchkeySecurity
@testable import LatchkeyStore
import Testing

/// The lock's operating mode in `lock.db` (migration "v3: operating mode").
@Suite struct StoredOperatingModeTests {
    let fixture = StoreFixture()

    @Test func theModeSurvivesReopeningTheFile() throws {
        #expect(try fixture.open().operatingModeStore().loadOperatingMode() == nil, "never set: Normal")
        try fixture.open().operatingModeStore().saveOperatingMode(.noRemoteLockUnlock)
        #expect(try fixture.open().operatingModeStore().loadOperatingMode() == .noRemoteLockUnlock)
        try fixture.open().operatingModeStore().saveOperatingMode(.passage)
        #expect(try fixture.open().operatingModeStore().loadOperatingMode() == .passage)
    }

    @Test func aStoreWrittenBeforeTheMigrationGainsTheTableAndKeepsItsData() throws {
        // A lock.db as the previous version left it: keys, no operatingMode table.
        let key = PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .admin)
        do {
            let store = try fixture.open()
            try store.keyStore().add(key)
            try store.write { db in
                try db.execute(sql: "DROP TABLE operatingMode")
                try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v3: operating mode'")
            }
            try store.close()
        }
        let store = try fixture.open()
        #expect(try store.keyStore().stored(id: 1)?.key == key)
        #expect(try store.operatingModeStore().loadOperatingMode() == nil)
        try store.operatingModeStore().saveOperatingMode(.noRemoteLockUnlock)
        #expect(try fixture.open().operatingModeStore().loadOperatingMode() == .noRemoteLockUnlock)
    }

    @Test func aModeThisVersionDoesNotKnowIsUndecodableNotNormal() throws {
        let store = try fixture.open()
        try store.write { db in
            try db.execute(sql: "INSERT INTO operatingMode (singleton, mode, changedWallNanos) VALUES (1, 2, 0)")
        }
        #expect(throws: StoreError.self) { _ = try store.operatingModeStore().loadOperatingMode() }
    }

    /// What a restarted lock makes of each stored mode (docs/RESTORATION.md).
    @Test func passageIsNotRestoredNoRemoteIs() {
        #expect(OperatingModeRestoration.modeAtStart(stored: nil) == .normal)
        #expect(OperatingModeRestoration.modeAtStart(stored: .normal) == .normal)
        #expect(OperatingModeRestoration.modeAtStart(stored: .noRemoteLockUnlock) == .noRemoteLockUnlock)
        #expect(OperatingModeRestoration.modeAtStart(stored: .passage) == .normal)
    }
}
