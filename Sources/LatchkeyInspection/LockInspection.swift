import LatchkeyControl
import LatchkeyDaemons
import LatchkeyLockProtocol
import LatchkeyStore

/// What `latchkey status`, `log` and `keys list` read: the lock's store, opened read-only
/// (`StateStores.openLockForReading`), beside the agent that may be writing it.
public final class LockInspection {
    public let directory: String
    let store: AgentStore
    public let log: StoredEventLog
    let keys: StoredKeyStore

    public init(directory: String) throws(RuntimeError) {
        self.directory = directory
        store = try StateStores.openLockForReading(directory)
        log = store.eventLog()
        keys = store.keyStore()
    }

    /// Runs a read, turning a store error into one sentence naming the directory.
    func reading<T>(_ body: () throws(StoreError) -> T) throws(RuntimeError) -> T {
        do { return try body() } catch { throw RuntimeError("cannot read the lock store in \(directory): \(error)") }
    }

    public func keyList() throws(RuntimeError) -> [StoredKey] { try reading { () throws(StoreError) in try keys.list() } }

    public func keyNames() throws(RuntimeError) -> KeyNames { KeyNames(try keyList()) }

    /// Newest first.
    public func newest(limit: Int, sinceWallNanos: Int64? = nil) throws(RuntimeError) -> [LoggedEvent] {
        try reading { () throws(StoreError) in try log.newest(limit: limit, sinceWallNanos: sinceWallNanos) }
    }

    /// Every entry after `sequence`, oldest first (what `log --follow` prints next).
    public func entries(after sequence: UInt64) throws(RuntimeError) -> [LoggedEvent] {
        try reading { () throws(StoreError) in try log.read(from: sequence + 1, limit: Int.max) }
    }

    // MARK: status

    /// `latchkey status`: the last known lock and door states and the newest events.
    public func status(recent: Int = 5) throws(RuntimeError) -> StatusReport {
        StatusReport(directory: directory, recent: try newest(limit: recent), names: try keyNames())
    }
}

/// `latchkey status` in words or as one JSON document.
public struct StatusReport {
    public var directory: String
    /// Newest first.
    public var recent: [LoggedEvent]
    public var names: KeyNames

    public var text: [String] {
        guard let last = recent.first else { return ["no events yet in \(directory)"] }
        return ["lock: \(last.event.lockStateAfter)  door: \(last.event.doorState)  (event #\(last.sequence))",
                "recent events:"] + recent.map { "  " + AuditLogFormat.textLine($0, names: names) }
    }

    /// `{"state_directory":…,"lock":"locked","door":"closed","last_sequence":12,"recent":[…]}`;
    /// lock, door and last_sequence are null while the log is empty.
    public var json: JSONValue {
        let last = recent.first
        return .object([
            ("state_directory", .string(directory)),
            ("lock", last.map { .string("\($0.event.lockStateAfter)") } ?? .null),
            ("door", last.map { .string("\($0.event.doorState)") } ?? .null),
            ("last_sequence", last.map { .int(Int64(clamping: $0.sequence)) } ?? .null),
            ("recent", .array(recent.map { AuditLogFormat.json($0, names: names) })),
        ])
    }
}

/// `latchkey keys list`: one row per key, as tab-separated columns or JSON. A new column is
/// one entry in `columns`.
public enum KeyListing {
    /// Name, and the value as text and as JSON.
    static let columns: [(name: String, text: @Sendable (StoredKey) -> String, json: @Sendable (StoredKey) -> JSONValue)] = [
        ("id", { "\($0.key.id)" }, { .int(Int64($0.key.id)) }),
        ("name", { PairingName.escaped($0.key.name) }, { .string(PairingName.escaped($0.key.name)) }),
        ("role", { $0.key.role.rawValue }, { .string($0.key.role.rawValue) }),
        ("state", { $0.key.revoked ? "revoked" : "active" }, { .string($0.key.revoked ? "revoked" : "active") }),
        ("arrival", { $0.key.mayRequestArrivalUnlock ? "on" : "off" }, { .bool($0.key.mayRequestArrivalUnlock) }),
        ("counter", { "\($0.lastCounter)" }, { .int(Int64(clamping: $0.lastCounter)) }),
        ("created", { WallTime.utc($0.createdWallNanos) }, { .string(WallTime.utc($0.createdWallNanos)) }),
    ]

    /// A header line, then one tab-separated line per key.
    public static func text(_ keys: [StoredKey]) -> [String] {
        [columns.map(\.name).joined(separator: "\t")] + keys.map { key in
            columns.map { $0.text(key) }.joined(separator: "\t")
        }
    }

    /// An array of objects, one per key, with the same fields.
    public static func json(_ keys: [StoredKey]) -> JSONValue {
        .array(keys.map { key in .object(columns.map { ($0.name, $0.json(key)) }) })
    }
}
