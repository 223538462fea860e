import LatchkeyAgents

/// The JSON the inspection commands print (`--json`, `log --format json`), written by hand:
/// keys stay in the order given (a person reading `status --json` sees the lock state first),
/// integers print as integers, and it costs no Codable conformances. (JSONEncoder would
/// work — FoundationEssentials is linked already, for the store's phone state — but sorts
/// or scrambles keys and needs a Codable type per document.) Strings are escaped by
/// `jsonString`, the encoder the agents' event lines already use.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([JSONValue])
    /// Members in order; a nil value is left out (an absent field, not `null`).
    case object([(String, JSONValue?)])

    public static func == (a: Self, b: Self) -> Bool { a.rendered == b.rendered }

    /// The value on one line, without spaces.
    public var rendered: String {
        switch self {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): "\(i)"
        case .string(let s): jsonString(s)
        case .array(let items): "[" + items.map(\.rendered).joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.compactMap { key, value in value.map { jsonString(key) + ":" + $0.rendered } }
                .joined(separator: ",") + "}"
        }
    }

    /// An optional member's value: nil leaves the member out.
    public static func text(_ s: String?) -> JSONValue? { s.map { .string($0) } }
    public static func number<I: BinaryInteger>(_ i: I?) -> JSONValue? { i.map { .int(Int64(clamping: $0)) } }
}
