import LatchkeySecurity
@testable import LatchkeyStore
import Testing

@Suite struct StoredKeyStoreTests {
    static func key(_ id: UInt32, role: KeyRole = .user, arrival: Bool = false) -> PhoneKey {
        PhoneKey(id: id, name: "phone \(id)", secret: Array(repeating: UInt8(id), count: 32), role: role,
                 mayRequestArrivalUnlock: arrival)
    }

    @Test func keysAreAddedListedAndReadBack() throws {
        let fixture = StoreFixture()
        let keys = try fixture.open().keyStore()
        try keys.add(Self.key(2, role: .admin, arrival: false))
        fixture.clocks.advance(by: .seconds(1))
        try keys.add(Self.key(1))

        let reopened = try fixture.open().keyStore()
        #expect(reopened.key(id: 2) == Self.key(2, role: .admin, arrival: false))
        #expect(reopened.key(id: 3) == nil)
        let listed = try reopened.list()
        #expect(listed.map(\.key.id) == [1, 2])
        #expect(listed[0].createdWallNanos - listed[1].createdWallNanos == 1_000_000_000)
        #expect(try reopened.nextID() == 3)
        #expect(throws: StoreError.self, "an id is never given to two keys") { try reopened.add(Self.key(2)) }
    }

    @Test func aUserKeyWithArrivalUnlockIsRefusedAndNothingIsAdded() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let keys = store.keyStore()
        #expect(throws: StoreError.self) { try keys.add(Self.key(1, role: .user, arrival: true)) }
        #expect(try keys.list().isEmpty)
        try keys.add(Self.key(1, role: .admin, arrival: true))
        #expect(keys.key(id: 1)?.mayRequestArrivalUnlock == true)
    }

    @Test func theMigrationTakesArrivalFromUserKeysAndLeavesAdminKeysTheirs() throws {
        // A lock.db as an older version left it: arrival was on for every new key.
        let fixture = StoreFixture()
        do {
            let store = try fixture.open()
            try store.keyStore().add(Self.key(1, role: .admin, arrival: true))
            try store.keyStore().add(Self.key(2, role: .user))
            try store.keyStore().add(Self.key(3, role: .admin))
            try store.write { db in
                try db.execute(sql: "UPDATE phoneKey SET mayRequestArrivalUnlock = 1 WHERE id = 2")
                try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v4:%'")
            }
            try store.close()
        }
        let reopened = try fixture.open()
        #expect(try reopened.keyStore().list().map(\.key.mayRequestArrivalUnlock) == [true, false, false])
    }

    @Test func countersPersistAcrossReopenAndOnlyMoveForward() throws {
        let fixture = StoreFixture()
        let keys = try fixture.open().keyStore()
        try keys.add(Self.key(1))
        try keys.add(Self.key(2))
        #expect(keys.lastCounter(keyID: 1) == 0)
        try keys.recordCounter(17, keyID: 1)

        let reopened = try fixture.open().keyStore()
        #expect(reopened.lastCounter(keyID: 1) == 17)
        #expect(reopened.lastCounter(keyID: 2) == 0, "counters are per key")
        #expect(throws: StoreError.self) { try reopened.recordCounter(17, keyID: 1) }
        #expect(throws: StoreError.self) { try reopened.recordCounter(3, keyID: 1) }
        #expect(throws: StoreError.self) { try reopened.recordCounter(1, keyID: 9) }
        try reopened.recordCounter(UInt64.max - 1, keyID: 1)
        #expect(reopened.lastCounter(keyID: 1) == UInt64.max - 1, "the full UInt64 range survives storage")
    }

    @Test func aRevokedKeyStaysRevoked() throws {
        let fixture = StoreFixture()
        let keys = try fixture.open().keyStore()
        try keys.add(Self.key(1))
        try keys.add(Self.key(2))
        fixture.clocks.advance(by: .seconds(5))
        try keys.revoke(id: 1)
        try keys.revoke(id: 1)
        #expect(throws: StoreError.self) { try keys.revoke(id: 9) }

        let reopened = try fixture.open().keyStore()
        #expect(reopened.key(id: 1)?.revoked == true)
        #expect(reopened.key(id: 2)?.revoked == false, "revoking one key touches no other")
        let stored = try #require(try reopened.stored(id: 1))
        #expect(stored.revokedWallNanos == fixture.clocks.wallNanos)
    }

    @Test func aRevocationByAnotherProcessTakesEffectAtOnce() throws {
        let fixture = StoreFixture()
        let agentKeys = try fixture.open().keyStore()
        try agentKeys.add(Self.key(1))
        #expect(agentKeys.key(id: 1)?.revoked == false)
        try fixture.open().keyStore().revoke(id: 1)  // `latchkey keys revoke 1`
        #expect(agentKeys.key(id: 1)?.revoked == true)
    }

    @Test func unreadableKeysFailClosed() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let keys = store.keyStore()
        try keys.add(Self.key(1))
        try store.close()
        #expect(keys.key(id: 1) == nil, "an unreadable key is unknown")
        #expect(keys.lastCounter(keyID: 1) == .max, "an unreadable counter makes every command a replay")
        #expect(keys.lastReadError != nil)
    }
}
