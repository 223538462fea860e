import Foundation
import LatchkeyStore
import Testing

/// docs/LOCK-RULES.md rule 7 and the durability settings the journal relies on.
@Suite struct StoreFilesAndModesTests {
    @Test func aNewStoreIsPrivate() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.eventLog().append(StoredEventLogTests.event(1))  // makes the WAL exist
        let files = FileManager.default
        #expect(files.permissions(fixture.scratch.state) == 0o700)
        #expect(files.permissions(fixture.path) == 0o600)
        #expect(files.permissions(fixture.path + "-wal") == 0o600)
    }

    @Test func durabilitySettingsAreInForce() throws {
        let store = try StoreFixture().open()
        #expect(try store.pragma("journal_mode") == "wal")
        #expect(try store.pragma("synchronous") == "2", "FULL: the WAL is fsync'ed at every commit")
    }

    @Test func anOpenStateDirectoryOfOursIsTightened() throws {
        let fixture = StoreFixture()
        try FileManager.default.createDirectory(atPath: fixture.scratch.state, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o755])
        _ = try fixture.open()
        #expect(FileManager.default.permissions(fixture.scratch.state) == 0o700)
    }

    @Test func aSharedDirectoryIsRefused() throws {
        let fixture = StoreFixture()
        try FileManager.default.createDirectory(atPath: fixture.scratch.state, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o1777])
        let error = try #require(throws: StoreError.self) { _ = try fixture.open() }
        guard case .insecureDirectory(let path, let mode) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(path == fixture.scratch.state && mode == 0o1777)
        #expect(FileManager.default.permissions(fixture.scratch.state) == 0o1777, "left as it was")
    }

    @Test func aFileOpenToOthersIsBroughtBackTo0600() throws {
        let fixture = StoreFixture()
        _ = try fixture.open()
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: fixture.path)
        _ = try fixture.open()
        #expect(FileManager.default.permissions(fixture.path) == 0o600)
    }
}
