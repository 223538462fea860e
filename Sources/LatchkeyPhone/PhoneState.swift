/// What the phone agent must not forget across its own death: where the owner
/// is, which arrival cycle was answered, and the last command counter (a counter that went
/// backwards after a restart would be refused by the lock as a replay).
public struct PhoneState: Sendable, Equatable, Codable {
    public var presence: PresenceMachine
    public var counter: UInt64
    public init(presence: PresenceMachine = PresenceMachine(), counter: UInt64 = 0) {
        self.presence = presence; self.counter = counter
    }
}

/// Durable storage for `PhoneState`. `save` returns only once the state is on disk.
public protocol PhoneStateStore: AnyObject {
    func load() throws -> PhoneState?
    func save(_ state: PhoneState) throws
}

public final class InMemoryPhoneStateStore: PhoneStateStore {
    public var state: PhoneState?
    public var saves = 0
    /// While set, `save` throws it and keeps nothing (a full or read-only disk, for tests).
    public var refusal: (any Error)?
    /// The saves refused while `refusal` was set.
    public private(set) var refused = 0
    public init(_ state: PhoneState? = nil) { self.state = state }
    public func load() throws -> PhoneState? { state }
    public func save(_ state: PhoneState) throws {
        if let refusal {
            refused += 1
            throw refusal
        }
        self.state = state; saves += 1
    }
}
