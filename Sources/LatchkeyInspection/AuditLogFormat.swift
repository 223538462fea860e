import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyStore

/// How `latchkey log` and `status` print audit-log entries: a line for people (`text`),
/// RFC 4180 rows (`csv`, with a header) or one JSON object per line (`json`, JSON Lines:
/// what `jq` reads, and what `--follow` can go on appending to).
public enum AuditLogFormat: String, CaseIterable, Sendable {
    case text, csv, json

    /// The line before the entries, if the format has one.
    public var header: String? {
        self == .csv ? "sequence,time,wall_ns,kind,key_id,key_name,lock,door,summary" : nil
    }

    /// One entry; `names`: the lock's key names by id, printed beside the ids.
    public func line(_ entry: LoggedEvent, names: KeyNames) -> String {
        switch self {
        case .text: Self.textLine(entry, names: names)
        case .csv: Self.csvRow(entry, names: names)
        case .json: Self.json(entry, names: names).rendered
        }
    }

    /// `#12  2026-11-24 12:00:05  unlocked over Bluetooth by key 3 (alice-phone)  [lock unlocked, door closed]`:
    /// sequence, local wall time (the event's own time is on the lock's monotonic clock,
    /// which a reader cannot place), the event in words.
    static func textLine(_ entry: LoggedEvent, names: KeyNames) -> String {
        "#\(entry.sequence)  \(WallTime.local(entry.wallNanos))  \(names.naming(entry.event.summary, key: entry.event.keyID))"
    }

    static func csvRow(_ entry: LoggedEvent, names: KeyNames) -> String {
        let event = entry.event
        let key = event.keyID?.rawValue
        return ["\(entry.sequence)", WallTime.utc(entry.wallNanos), "\(entry.wallNanos)", event.kindName,
                key.map { "\($0)" } ?? "", key.flatMap { names[$0] } ?? "", "\(event.lockStateAfter)",
                "\(event.doorState)", event.summary].map(csvField).joined(separator: ",")
    }

    public static func json(_ entry: LoggedEvent, names: KeyNames) -> JSONValue {
        let event = entry.event
        let key = event.keyID?.rawValue
        return .object([
            ("sequence", .int(Int64(clamping: entry.sequence))), ("time", .string(WallTime.utc(entry.wallNanos))),
            ("wall_ns", .int(entry.wallNanos)), ("kind", .string(event.kindName)),
            ("key_id", .number(key)), ("key_name", .text(key.flatMap { names[$0] })),
            ("lock", .string("\(event.lockStateAfter)")), ("door", .string("\(event.doorState)")),
            ("summary", .string(event.summary)),
        ])
    }

    /// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
    static func csvField(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return field }
        return "\"" + field.replacing("\"", with: "\"\"") + "\""
    }
}

/// The lock's key names by id, read once per command from the store.
public struct KeyNames: Sendable {
    var names: [UInt32: String]

    public init(_ names: [UInt32: String] = [:]) { self.names = names }

    /// Names as stored may predate the rule for names (`PairingName`): each is kept escaped, so
    /// no listing, CSV cell or summary ever prints a control or bidi character raw.
    public init(_ keys: [StoredKey]) {
        self.init(Dictionary(keys.map { ($0.key.id, PairingName.escaped($0.key.name)) }, uniquingKeysWith: { first, _ in first }))
    }

    public subscript(id: UInt32) -> String? { names[id] }

    /// `summary` with the key's name after its id: "... key 3 ..." reads "... key 3 (alice) ...",
    /// and "(key 3)" reads "(key 3, alice)".
    func naming(_ summary: String, key: KeyID?) -> String {
        guard let id = key?.rawValue, let name = names[id] else { return summary }
        let token = "key \(id)"
        var searchStart = summary.startIndex
        while let found = summary[searchStart...].firstRange(of: token) {
            // "key 3", not the start of "key 31".
            if found.upperBound == summary.endIndex || !summary[found.upperBound].isNumber {
                var named = summary
                let inParentheses = found.upperBound < summary.endIndex && summary[found.upperBound] == ")"
                named.replaceSubrange(found, with: inParentheses ? "\(token), \(name)" : "\(token) (\(name))")
                return named
            }
            searchStart = found.upperBound
        }
        return summary
    }
}
