import LatchkeyEvents
import LatchkeyTransport

/// One line of an agent's machine-readable timeline (what `latchkey demo` and the HIL
/// suite read). Human-readable logs go through swift-log; these are for checking.
public struct AgentEvent: Sendable, Equatable {
    public var name: String
    public var time: Instant
    public var fields: [(String, String)]

    public init(_ name: String, time: Instant, _ fields: [(String, String)] = []) {
        self.name = name; self.time = time; self.fields = fields
    }

    /// The line of a catalogue event (LatchkeyEvents), as every emitter makes one.
    public init(_ event: Event, time: Instant) {
        self.init(event.name, time: time, event.fields)
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.name == b.name && a.time == b.time && a.fields.map { $0.0 + "=" + $0.1 } == b.fields.map { $0.0 + "=" + $0.1 }
    }

    public func field(_ key: String) -> String? { fields.first { $0.0 == key }?.1 }

    /// One JSON object on one line: {"event":"...","t_ms":...,"k":"v",...}.
    public var jsonLine: String {
        var parts = ["\"event\":\(jsonString(name))", "\"t_ms\":\(Double(time.nanoseconds) / 1_000_000)"]
        for (k, v) in fields { parts.append("\(jsonString(k)):\(jsonString(v))") }
        return "{" + parts.joined(separator: ",") + "}"
    }
}

/// A JSON string literal for `s`.
public func jsonString(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if u.value < 0x20 { out += "\\u" + String(repeating: "0", count: 4 - String(u.value, radix: 16).count) + String(u.value, radix: 16) }
            else { out.unicodeScalars.append(u) }
        }
    }
    return out + "\""
}

/// Where agents send timeline events.
public protocol AgentEventSink: AnyObject {
    func emit(_ event: AgentEvent)
}

/// Keeps events in memory (tests).
public final class RecordingEventSink: AgentEventSink {
    public private(set) var events: [AgentEvent] = []
    public init() {}
    public func emit(_ event: AgentEvent) { events.append(event) }
    public func names() -> [String] { events.map(\.name) }
}
