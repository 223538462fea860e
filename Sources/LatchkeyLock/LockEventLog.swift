/// The lock's audit log: every LockEvent, numbered. The SQLite store implements it for the
/// agent; the in-memory one serves tests.
public protocol LockEventLog: AnyObject {
    /// Appends and returns the event's sequence number (1, 2, ...).
    @discardableResult
    func append(_ event: LockEvent) throws -> UInt32
    /// Encoded events with sequence ≥ `from`, oldest first, at most `limit`.
    func events(from sequence: UInt32, limit: Int) throws -> [(sequence: UInt32, bytes: [UInt8])]
    var lastSequence: UInt32 { get }
}

public final class InMemoryLockEventLog: LockEventLog {
    public private(set) var entries: [(sequence: UInt32, event: LockEvent)] = []
    public init() {}
    public func append(_ event: LockEvent) throws -> UInt32 {
        let seq = (entries.last?.sequence ?? 0) + 1
        entries.append((seq, event))
        return seq
    }
    public func events(from sequence: UInt32, limit: Int) throws -> [(sequence: UInt32, bytes: [UInt8])] {
        entries.filter { $0.sequence >= sequence }.prefix(limit).map { ($0.sequence, $0.event.encoded) }
    }
    public var lastSequence: UInt32 { entries.last?.sequence ?? 0 }
}
