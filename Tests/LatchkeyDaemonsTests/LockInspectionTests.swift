#if canImport(Glibc)
import Glibc
#endif
import LatchkeyLock
import LatchkeyPosix
@testable import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeyDemo
@testable import LatchkeyDoctor
@testable import LatchkeyInspection
import LatchkeySecurity
import LatchkeyStore
import Testing

/// `latchkey status`, `log` and `keys list`: the store read-only, the newest
/// first, key names beside ids, JSON and CSV for scripts, and `--follow` woken by the agent's
/// writes.
@Suite struct LockInspectionTests {
    static let jam = LockEvent(kind: .doorLockAlarm(.lockJammed), time: .zero, lockStateBefore: .locking,
                               lockStateAfter: .notFullyLocked, doorState: .closed)

    static func operation(_ op: LockOperationType, key: UInt32) -> LockEvent {
        LockEvent(kind: .lockOperation(LockOperationRecord(operation: op, source: .remote, who: KeyID(key))),
                  time: .zero, lockStateBefore: .locked, lockStateAfter: op == .lock ? .locked : .unlocked,
                  doorState: .closed)
    }

    /// A lock store as the agent leaves it: key 3 "alice, phone" and one lock by it.
    static func lockStore(_ directory: String) throws -> AgentStore {
        let store = try AgentStore(directory: directory, fileName: StateStores.lockFile)
        try store.keyStore().add(PhoneKey(id: 3, name: "alice, phone", secret: CommandSealing.newSecret(), role: .admin,
                                              mayRequestArrivalUnlock: true))
        try store.eventLog().append(operation(.lock, key: 3))
        return store
    }

    func scratch() throws -> String { try RuntimeDirectory.makeTemporary(prefix: "latchkey-inspect") }

    @Test func missingAndCorruptStoresAreOneSentenceAndLeftAlone() throws {
        let dir = try scratch()
        defer { RuntimeDirectory.remove(dir) }
        #expect(throws: RuntimeError.self) { _ = try LockInspection(directory: dir + "/typo") }
        #expect(access(dir + "/typo", F_OK) != 0)
        try writeFile(dir + "/lock.db", String(repeating: "not a database ", count: 400))
        let error = try #require(throws: RuntimeError.self) { _ = try LockInspection(directory: dir) }
        #expect(error.description.contains("left where it is"), "\(error)")
        var entries = 0
        if let d = opendir(dir) {
            while let e = readdir(d) { if e.pointee.d_name.0 != 0x2E { entries += 1 } }
            closedir(d)
        }
        #expect(entries == 1, "nothing moved aside or added")
    }

    @Test func theLogIsNewestFirstWithKeyNames() throws {
        let dir = try scratch()
        defer { RuntimeDirectory.remove(dir) }
        let store = try Self.lockStore(dir)
        try store.eventLog().append(Self.operation(.unlock, key: 3))
        try store.eventLog().append(Self.jam)
        let inspection = try LockInspection(directory: dir)
        let names = try inspection.keyNames()
        let entries = try inspection.newest(limit: 10)
        #expect(entries.map(\.sequence) == [3, 2, 1])
        let text = AuditLogFormat.text.line(entries[1], names: names)
        #expect(text.hasPrefix("#2  ") && text.contains("unlocked over Bluetooth by key 3 (alice, phone)"), "\(text)")
        #expect(AuditLogFormat.text.line(entries[0], names: names).contains("alarm: lock jammed"))
        // A name beside an id already in parentheses, and an id that only starts the same.
        let named = KeyNames([3: "alice", 31: "bob"])
        #expect(named.naming("rejected: revoked key (key 3); operation unknown", key: KeyID(3))
                    == "rejected: revoked key (key 3, alice); operation unknown")
        #expect(named.naming("unlocked over Bluetooth by key 31  [lock unlocked, door closed]", key: KeyID(3))
                    == "unlocked over Bluetooth by key 31  [lock unlocked, door closed]")
    }

    @Test func csvAndJSONCarryTheKeyBesideItsName() throws {
        let dir = try scratch()
        defer { RuntimeDirectory.remove(dir) }
        _ = try Self.lockStore(dir)
        let inspection = try LockInspection(directory: dir)
        let entry = try #require(try inspection.newest(limit: 1).first)
        let names = try inspection.keyNames()
        #expect(AuditLogFormat.csv.header == "sequence,time,wall_ns,kind,key_id,key_name,lock,door,summary")
        let row = AuditLogFormat.csv.line(entry, names: names)
        #expect(row.hasPrefix("1,20") && row.contains("Z,\(entry.wallNanos),LockOperation,3,\"alice, phone\",locked,closed,"), "\(row)")
        let json = AuditLogFormat.json.line(entry, names: names)
        #expect(json.hasPrefix("{\"sequence\":1,\"time\":\"") && json.contains("\"kind\":\"LockOperation\",\"key_id\":3,\"key_name\":\"alice, phone\",\"lock\":\"locked\""), "\(json)")
        #expect(AuditLogFormat.csvField("say \"hi\"") == "\"say \"\"hi\"\"\"")
    }

    @Test func statusAsJSONIsOneDocument() throws {
        let dir = try scratch()
        defer { RuntimeDirectory.remove(dir) }
        _ = try AgentStore(directory: dir, fileName: StateStores.lockFile)
        let empty = try LockInspection(directory: dir).status().json.rendered
        #expect(empty == "{\"state_directory\":\"\(dir)\",\"lock\":null,\"door\":null,\"last_sequence\":null,\"recent\":[]}")
        let store = try Self.lockStore(dir + "/2")
        try store.eventLog().append(Self.jam)
        let report = try LockInspection(directory: dir + "/2").status()
        #expect(report.json.rendered.hasPrefix("{\"state_directory\":\"\(dir)/2\",\"lock\":\"notFullyLocked\",\"door\":\"closed\",\"last_sequence\":2,\"recent\":[{\"sequence\":2,"))
        #expect(report.text.first == "lock: notFullyLocked  door: closed  (event #2)")
    }

    @Test func keysListAsTextAndJSON() throws {
        let dir = try scratch()
        defer { RuntimeDirectory.remove(dir) }
        _ = try Self.lockStore(dir)
        let keys = try LockInspection(directory: dir).keyList()
        let text = KeyListing.text(keys)
        #expect(text.first == "id\tname\trole\tstate\tarrival\tcounter\tcreated")
        #expect(text.dropFirst().first?.hasPrefix("3\talice, phone\tadmin\tactive\ton\t0\t20") == true, "\(text)")
        #expect(KeyListing.json(keys).rendered.hasPrefix(
            "[{\"id\":3,\"name\":\"alice, phone\",\"role\":\"admin\",\"state\":\"active\",\"arrival\":true,\"counter\":0,\"created\":\"20"))
    }

    @Test func sinceReadsRelativeAbsoluteAndEpochTimes() {
        let now: Int64 = 1_800_000_000 * 1_000_000_000
        #expect(WallTime.parseSince("90s", nowNanos: now) == now - 90 * 1_000_000_000)
        #expect(WallTime.parseSince("2h", nowNanos: now) == now - 7200 * 1_000_000_000)
        #expect(WallTime.parseSince("7d", nowNanos: now) == now - 7 * 86400 * 1_000_000_000)
        let epoch: Int64 = 1_700_000_000 * 1_000_000_000
        #expect(WallTime.parseSince("@1700000000", nowNanos: now) == epoch)
        let day = WallTime.parseSince("2026-11-24", nowNanos: now)
        #expect(day != nil)
        #expect(WallTime.parseSince("2026-11-24 13:30", nowNanos: now) == day.map { $0 + 13 * 3600 * 1_000_000_000 + 30 * 60 * 1_000_000_000 })
        #expect(WallTime.parseSince("2026-11-24T13:30:05", nowNanos: now) == day.map { $0 + (13 * 3600 + 30 * 60 + 5) * 1_000_000_000 })
        for bad in ["yesterday", "2h ago", "2026-11-24x", "", "-5m", "2026-11-24 13", "2026-13-01", "99999999999d", "@99999999999999"] { #expect(WallTime.parseSince(bad, nowNanos: now) == nil, "\(bad)") }
    }

    /// The agent's writes wake the follower (inotify); it prints each new entry once.
    @Test func followPrintsWhatTheAgentAppends() throws {
        let dir = try scratch()
        defer { RuntimeDirectory.remove(dir) }
        let agent = try Self.lockStore(dir)
        let loop = PosixEventLoop()
        var printed: [UInt64] = []
        let inspection = try LockInspection(directory: dir)
        let follower = try AuditLogFollower(inspection, after: 1, loop: loop) { printed.append($0.sequence) }
        try agent.eventLog().append(Self.jam)
        #expect(try loop.run(until: { printed == [2] }, timeout: .seconds(10)))
        try agent.eventLog().append(Self.operation(.unlock, key: 3))
        try agent.eventLog().append(Self.operation(.lock, key: 3))
        #expect(try loop.run(until: { printed == [2, 3, 4] }, timeout: .seconds(10)))
        #expect(follower.lastSequence == 4)
    }

    @Test func theStateDirectoryComesFromTheConfiguration() throws {
        let dir = try scratch()
        defer { RuntimeDirectory.remove(dir) }
        try writeFile(dir + "/lock.yaml", "transport: sim\nsim:\n  address: \"C0:FF:EE:00:00:01\"\nboard: sim\nstate_directory: /srv/door\n")
        #expect(try InspectedStateDirectory.resolve(stateDir: nil, config: dir + "/lock.yaml") == "/srv/door")
        #expect(try InspectedStateDirectory.resolve(stateDir: "/x", config: dir + "/lock.yaml") == "/x")
        #expect(try InspectedStateDirectory.resolve(stateDir: nil, config: nil, exists: { _ in false }) == "/var/lib/latchkey/lock")
        let error = try #require(throws: RuntimeError.self) {
            _ = try InspectedStateDirectory.resolve(stateDir: nil, config: dir + "/missing.yaml")
        }
        #expect(error.exitStatus == 78)
    }

    @Test func doctorJSONNamesTheWorstVerdict() {
        let findings: [DoctorFinding] = [.ok("kernel"), .warn("l2cap \"crash\""), .ok("gpio")]
        #expect(Doctor.json(findings, agent: "lock").rendered == """
            {"agent":"lock","verdict":"warn","blocks":false,"findings":[{"verdict":"ok","message":"kernel"},\
            {"verdict":"warn","message":"l2cap \\"crash\\""},{"verdict":"ok","message":"gpio"}]}
            """)
        #expect(Doctor.json(findings + [.fix("adapter")], agent: "phone").rendered.hasPrefix(
            "{\"agent\":\"phone\",\"verdict\":\"fix\",\"blocks\":true,"))
    }
}
