import FoundationEssentials
import LatchkeySQLite

/// Blobs as `Data`, for the views that hand bytes to JSONEncoder/JSONDecoder.
extension Data: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .blob([UInt8](self)) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        if case .blob(let bytes) = value { return Data(bytes) }
        return nil
    }
}
