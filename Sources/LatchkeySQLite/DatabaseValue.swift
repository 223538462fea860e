/// One SQLite value, in SQLite's five storage classes.
public enum DatabaseValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// The value as SQLite's `sqlite3_column_text` would render it (what `PRAGMA` answers are
    /// read as); nil for NULL and blobs.
    public var text: String? {
        switch self {
        case .null, .blob: nil
        case .integer(let v): String(v)
        case .real(let v): String(v)
        case .text(let v): v
        }
    }
}

/// A Swift type stored in one column. Conversions are strict: an integer column is not read
/// as a string, an out-of-range integer is not truncated (`fromDatabaseValue` returns nil and
/// the read throws `RowDecodingError`). The tables are STRICT, so a mismatch means a bug or a
/// damaged file, never a value to coerce.
public protocol DatabaseValueConvertible {
    var databaseValue: DatabaseValue { get }
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
}

extension Int64: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(self) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        if case .integer(let v) = value { return v }
        return nil
    }
}

/// Fixed-width integers other than Int64 go through it, exactly.
public protocol DatabaseInteger: DatabaseValueConvertible, FixedWidthInteger {}

extension DatabaseInteger {
    public var databaseValue: DatabaseValue { .integer(Int64(self)) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Self? {
        Int64.fromDatabaseValue(value).flatMap { Self(exactly: $0) }
    }
}

extension Int: DatabaseInteger {}
extension Int32: DatabaseInteger {}
extension UInt8: DatabaseInteger {}
extension UInt16: DatabaseInteger {}
extension UInt32: DatabaseInteger {}

extension Bool: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? {
        switch value {
        case .integer(0): false
        case .integer(1): true
        default: nil
        }
    }
}

extension Double: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .real(self) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case .real(let v): v
        case .integer(let v): Double(exactly: v)
        default: nil
        }
    }
}

extension String: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .text(self) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        if case .text(let v) = value { return v }
        return nil
    }
}

extension Array: DatabaseValueConvertible where Element == UInt8 {
    public var databaseValue: DatabaseValue { .blob(self) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> [UInt8]? {
        if case .blob(let v) = value { return v }
        return nil
    }
}

/// NULL is nil; anything else must convert to `Wrapped`.
extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { self?.databaseValue ?? .null }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Wrapped?? {
        if case .null = value { return .some(nil) }
        return Wrapped.fromDatabaseValue(value).map { .some($0) }
    }
}

/// The values bound to a statement's `?` parameters, in order:
/// `arguments: [id, name, revoked ? now : nil]`.
public struct StatementArguments: ExpressibleByArrayLiteral {
    public var values: [DatabaseValue]

    public init(_ values: [DatabaseValue]) { self.values = values }

    public init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        values = elements.map { $0?.databaseValue ?? .null }
    }
}
