import Foundation
import LatchkeyLock
import LatchkeySecurity
import LatchkeyStore
import Testing

/// `latchkey status`, `log` and `keys list` open the store read-only beside a
/// running agent — they create no directory or file, never write, and leave a damaged file
/// where it is for the agent to deal with.
@Suite struct ReadOnlyStoreTests {
    func openForReading(_ fixture: StoreFixture) throws(StoreError) -> AgentStore {
        try AgentStore(directory: fixture.scratch.state, fileName: StoreFixture.fileName, wallClock: fixture.clocks.wall,
                       access: .readOnly)
    }

    @Test func aMissingDirectoryIsNotCreated() throws {
        let fixture = StoreFixture()
        let error = try #require(throws: StoreError.self) { _ = try openForReading(fixture) }
        guard case .notAStore(let path, _) = error else { Issue.record("\(error)"); return }
        #expect(path == fixture.scratch.state)
        #expect(!FileManager.default.fileExists(atPath: fixture.scratch.state), "no directory was created")
    }

    @Test func aDirectoryWithoutTheStoreGetsNoFile() throws {
        let fixture = StoreFixture()
        try FileManager.default.createDirectory(atPath: fixture.scratch.state, withIntermediateDirectories: false)
        let error = try #require(throws: StoreError.self) { _ = try openForReading(fixture) }
        guard case .notAStore(let path, _) = error else { Issue.record("\(error)"); return }
        #expect(path == fixture.path)
        #expect(!FileManager.default.fileExists(atPath: fixture.path), "no database was created")
    }

    @Test func aForeignDatabaseIsNotAStore() throws {
        let fixture = StoreFixture()
        try FileManager.default.createDirectory(atPath: fixture.scratch.state, withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: fixture.path, contents: Data()))
        let error = try #require(throws: StoreError.self) { _ = try openForReading(fixture) }
        guard case .notAStore = error else { Issue.record("\(error)"); return }
    }

    @Test func aCorruptFileIsReportedAndLeftInPlace() throws {
        let fixture = StoreFixture()
        try FileManager.default.createDirectory(atPath: fixture.scratch.state, withIntermediateDirectories: false)
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: fixture.path))
        let error = try #require(throws: StoreError.self) { _ = try openForReading(fixture) }
        guard case .corrupt = error else { Issue.record("\(error)"); return }
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.scratch.state)
        #expect(files == [StoreFixture.fileName], "nothing moved aside, nothing added: \(files)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.path)) == garbage)
    }

    @Test func readsWhatTheAgentWroteAndRefusesToWrite() throws {
        let fixture = StoreFixture()
        let agent = try fixture.open()
        try agent.eventLog().append(StoredEventLogTests.event(1))
        try agent.keyStore().add(PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .user))
        let reader = try openForReading(fixture)
        #expect(try reader.eventLog().read(limit: 10).map(\.sequence) == [1])
        #expect(try reader.keyStore().list().map(\.key.name) == ["alice"])
        #expect(throws: StoreError.self) { try reader.eventLog().append(StoredEventLogTests.event(2)) }
        // The agent goes on writing; the reader sees it at its next read.
        try agent.eventLog().append(StoredEventLogTests.event(3))
        #expect(try reader.eventLog().read(limit: 10).map(\.sequence) == [1, 2])
    }
}
