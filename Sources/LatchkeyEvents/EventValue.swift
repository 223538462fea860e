/// A field's value in the type the catalogue gives it. `eventText` is what the JSON line, the
/// journal's field and the MQTT payload print for it: users filter on that text, so it is the
/// text the emitters printed when every value was a string (EventValueTextTests pins it).
public protocol EventValue: Sendable {
    var eventText: String { get }
    /// The type docs/EVENTS.md shows for a field of this type.
    static var eventType: EventValueType { get }
}

/// What docs/EVENTS.md says a field holds: its type, and for a closed set every value it prints.
public enum EventValueType: Hashable, Sendable {
    case text, integer, boolean
    /// A duration, printed in whole seconds (`Duration.components.seconds`).
    case seconds
    /// A duration, printed in milliseconds with a fraction (`12.5`).
    case milliseconds
    /// A duration as Swift prints one (`0.25 seconds`).
    case duration
    /// One of a closed set of words: the set's name and each word as printed.
    case oneOf(String, [String])
    /// An integer printed after a word (`decision#12`).
    case numbered(String)
    /// A value of the first type, or the word printed when there is none.
    indirect case orWord(EventValueType, String)

    /// Whether a value of type `other` fits a field of this type (the word a field prints for
    /// "none" is the field's to declare, not the value's).
    func accepts(_ other: EventValueType) -> Bool {
        switch (self, other) {
        case (.orWord(let a, _), .orWord(let b, _)): a.accepts(b)
        case (.numbered, .numbered): true
        default: self == other
        }
    }

    /// The type as docs/EVENTS.md's field list shows it.
    public var documented: String {
        switch self {
        case .text: "text"
        case .integer: "integer"
        case .boolean: "true or false"
        case .seconds: "seconds"
        case .milliseconds: "milliseconds"
        case .duration: "duration (`0.25 seconds`)"
        case .oneOf(let name, let words): "\(name): " + words.map { "`\($0)`" }.joined(separator: ", ")
        case .numbered(let prefix): "`\(prefix)` and an integer"
        case .orWord(let type, let word): "\(type.documented), or `\(word)`"
        }
    }
}

extension String: EventValue {
    public var eventText: String { self }
    public static var eventType: EventValueType { .text }
}

extension Bool: EventValue {
    public var eventText: String { self ? "true" : "false" }
    public static var eventType: EventValueType { .boolean }
}

/// Every integer prints in decimal, without grouping (`4294967295`).
extension EventValue where Self: BinaryInteger {
    public var eventText: String { String(self) }
    public static var eventType: EventValueType { .integer }
}

extension Int: EventValue {}
extension Int32: EventValue {}
extension UInt8: EventValue {}
extension UInt16: EventValue {}
extension UInt32: EventValue {}
extension UInt64: EventValue {}

/// A closed set of words a field prints: the enum's raw value is the word.
public protocol EventWord: EventValue, RawRepresentable<String>, CaseIterable {
    /// The set's name in docs/EVENTS.md.
    static var setName: String { get }
}

extension EventWord {
    public var eventText: String { rawValue }
    public static var eventType: EventValueType { .oneOf(setName, allCases.map(\.rawValue)) }
}

/// A duration a field prints in whole seconds, as `Duration.components.seconds` gives them.
public struct WholeSeconds: EventValue {
    public let duration: Duration
    public init(_ duration: Duration) { self.duration = duration }
    public var eventText: String { String(duration.components.seconds) }
    public static var eventType: EventValueType { .seconds }
}

/// A duration a field prints in milliseconds with a fraction: the nanoseconds (saturating at
/// Int64's range) over a million, as a Double prints (`12.5`, `3.0`).
public struct Milliseconds: EventValue {
    public let duration: Duration
    public init(_ duration: Duration) { self.duration = duration }
    public var eventText: String {
        let (seconds, attoseconds) = duration.components
        let (ns, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let nanoseconds = overflow ? (seconds < 0 ? Int64.min : .max) : ns &+ attoseconds / 1_000_000_000
        return String(Double(nanoseconds) / 1_000_000)
    }
    public static var eventType: EventValueType { .milliseconds }
}

/// A duration a field prints as Swift prints a `Duration` (`0.25 seconds`).
public struct SwiftDuration: EventValue {
    public let duration: Duration
    public init(_ duration: Duration) { self.duration = duration }
    public var eventText: String { "\(duration)" }
    public static var eventType: EventValueType { .duration }
}

/// An integer a field prints after a word (`decision#12`), as the domain type describes itself.
public struct Numbered: EventValue {
    public let prefix: String
    public let number: UInt64
    init(_ prefix: String, _ number: UInt64) { self.prefix = prefix; self.number = number }
    public var eventText: String { prefix + String(number) }
    public static var eventType: EventValueType { .numbered("") }
}

/// A value, or the word a field prints in its place when there is none (`unknown`, `none`):
/// for a field that is always printed, unlike an optional one.
public struct OrWord<Value: EventValue>: EventValue {
    public let value: Value?
    let word: String
    init(_ value: Value?, else word: String) { self.value = value; self.word = word }
    public var eventText: String { value?.eventText ?? word }
    public static var eventType: EventValueType { .orWord(Value.eventType, "") }
}

/// A decision's number in the journal, or `none` when the command decided nothing.
public enum DecisionNumber: EventValue {
    case number(UInt64)
    case nothingDecided

    public init(_ number: UInt64?) { self = number.map { .number($0) } ?? .nothingDecided }

    public var eventText: String {
        switch self {
        case .number(let n): String(n)
        case .nothingDecided: "none"
        }
    }
    public static var eventType: EventValueType { .orWord(.integer, "") }
}
