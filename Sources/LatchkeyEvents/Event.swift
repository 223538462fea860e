/// An event of an agents' timeline as declared in the catalogue (EventCatalogue.swift): its name
/// (the JSON line's "event", journald's LATCHKEY_EVENT), what it means, and its fields in the
/// order an emitted line prints them.
public struct EventKind: Hashable, Sendable {
    public let name: String
    public let meaning: String
    public let fields: [EventField]

    init(_ name: String, _ meaning: String, _ fields: [EventField] = []) {
        self.name = name; self.meaning = meaning; self.fields = fields
    }

    /// The declared event called `name`, if there is one.
    public static func named(_ name: String) -> EventKind? { byName[name] }

    private static let byName: [String: EventKind] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}

/// One field of an event: its key (journald's LATCHKEY_<KEY>, or KEY_ID for `key`), the type of
/// its value, and what it holds; an optional field is printed only when the emitter has a value
/// for it.
public struct EventField: Hashable, Sendable {
    public let key: String
    public let type: EventValueType
    public let meaning: String
    public let isOptional: Bool

    init(_ key: String, _ type: EventValueType, _ meaning: String, isOptional: Bool = false) {
        self.key = key; self.type = type; self.meaning = meaning; self.isOptional = isOptional
    }

    var optional: EventField { EventField(key, type, meaning, isOptional: true) }
}

/// The agent an event of both agents belongs to: its name's prefix.
public enum AgentRole: String, Sendable {
    case lock, phone
}

/// One event with its values, made by the catalogue's constructor for its kind (`Event.lockStarted(...)`).
public struct Event: Sendable {
    public let kind: EventKind
    /// The fields that have a value, in the declared order.
    public let fields: [(String, String)]

    public var name: String { kind.name }

    /// `values` are the kind's fields' values in order; nil leaves an optional field out. Each
    /// value prints as its `eventText`.
    init(_ kind: EventKind, _ values: (any EventValue)?...) {
        precondition(values.count == kind.fields.count, "\(kind.name): \(values.count) values for \(kind.fields.count) fields")
        self.kind = kind
        fields = zip(kind.fields, values).compactMap { field, value in
            guard let value else { return nil }
            // The constructor's parameter types and the fields' declared types are written apart.
            assert(field.type.accepts(type(of: value).eventType), "\(kind.name).\(field.key): not a \(field.type)")
            return (field.key, value.eventText)
        }
    }
}
