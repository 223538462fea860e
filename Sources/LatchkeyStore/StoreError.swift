import CSQLite
import LatchkeySQLite

/// Why the store could not be opened or could not do what was asked. Every case names the
/// file it concerns, so a log line is enough to find it.
public enum StoreError: Error, Sendable, CustomStringConvertible {
    /// The file is not a database, or its integrity check failed: see `StoreCorruption`.
    case corrupt(StoreCorruption)
    /// The state directory exists with group or other access and is not ours to tighten.
    case insecureDirectory(path: String, mode: UInt32)
    /// A file-system call failed (mkdir, open, chmod, rename).
    case fileSystem(path: String, call: String, errno: Int32)
    /// The database holds migrations this program does not know: it was written by a newer
    /// version. Not corruption: nothing is moved aside, the agent refuses to start.
    case newerSchema(path: String, unknownMigrations: [String])
    /// The store refused a write that would break one of its rules (a decision id recorded
    /// twice, a counter that does not advance, an unknown key or decision).
    case rejected(path: String, reason: String)
    /// A stored value could not be read back (a log entry in an unknown encoding, a phone
    /// state the decoder refuses).
    case undecodable(path: String, what: String)
    /// Any other SQLite error: disk full, I/O error, busy beyond the timeout.
    case database(path: String, message: String)
    /// A read-only open found no store to read: the directory or the file is missing, or the
    /// file is not (or not yet) a Latchkey store. Nothing was created or moved.
    case notAStore(path: String, reason: String)

    public var description: String {
        switch self {
        case .corrupt(let corruption): "\(corruption)"
        case .insecureDirectory(let path, let mode):
            "state directory \(path) has mode \(String(mode, radix: 8)); it must be 0700 (chmod 700 \(path))"
        case .fileSystem(let path, let call, let errno): "\(call)(\(path)) failed: errno \(errno)"
        case .newerSchema(let path, let unknown):
            "\(path) was written by a newer latchkey (unknown migrations: \(unknown.joined(separator: ", ")))"
        case .rejected(let path, let reason): "\(path): refused: \(reason)"
        case .undecodable(let path, let what): "\(path): cannot decode \(what)"
        case .database(let path, let message): "\(path): \(message)"
        case .notAStore(let path, let reason): "\(path): \(reason)"
        }
    }

    /// Maps whatever SQLite or the code around it threw to a `StoreError` naming `path`.
    /// SQLite's NOTADB and CORRUPT become `.corrupt`, so a database that goes bad while the
    /// agent runs is reported the same way as one found bad at start.
    static func wrapping(_ error: any Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? RowDecodingError { return .undecodable(path: path, what: "\(error)") }
        guard let error = error as? DatabaseError else {
            return .database(path: path, message: "\(error)")
        }
        switch error.resultCode {
        case SQLITE_NOTADB:
            return .corrupt(StoreCorruption(path: path, reason: .notADatabase, detail: error.message))
        case SQLITE_CORRUPT:
            return .corrupt(StoreCorruption(path: path, reason: .integrityCheckFailed, detail: error.message))
        default:
            return .database(path: path, message: "\(error)")
        }
    }
}

/// Runs `body`, turning anything it throws into a `StoreError` about `path`.
func storeOperation<T>(path: String, _ body: () throws -> T) throws(StoreError) -> T {
    do { return try body() } catch { throw StoreError.wrapping(error, path: path) }
}
