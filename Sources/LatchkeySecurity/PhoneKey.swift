import LatchkeyLockProtocol

/// What a key may do (docs/LOCK-RULES.md rule 2: per-command authorization).
public enum KeyRole: String, Sendable, Codable, CaseIterable {
    /// May also manage keys and configuration.
    case admin
    /// A household member's or a guest's key: locks and unlocks, never reconfigures, and
    /// never asks for an arrival unlock.
    case user

    /// Only an admin key may carry the arrival-unlock flag: an unlock nobody tapped for is
    /// the owner's own opt-in, never something a guest's phone does (docs/SECURITY.md,
    /// "Arrival unlock").
    public var mayHaveArrivalUnlock: Bool { self == .admin }
}

/// One phone's key, as the lock holds it. The secret is per phone: no two phones share one,
/// and revoking one key touches no other.
public struct PhoneKey: Sendable, Equatable, Codable {
    public var id: UInt32
    public var name: String
    /// 32 octets, the ChaChaPoly key.
    public var secret: [UInt8]
    public var role: KeyRole
    /// Whether this phone's away→home logic may ask for an arrival unlock. Off unless the
    /// owner turned it on (`keys add --arrival`, `pair --arrival`), and only for an admin key.
    public var mayRequestArrivalUnlock: Bool
    public var revoked: Bool

    public init(id: UInt32, name: String, secret: [UInt8], role: KeyRole, mayRequestArrivalUnlock: Bool = false,
                revoked: Bool = false) {
        precondition(secret.count == 32, "a phone key is 32 octets")
        self.id = id; self.name = name; self.secret = secret; self.role = role
        self.mayRequestArrivalUnlock = mayRequestArrivalUnlock; self.revoked = revoked
    }

    /// Whether this key's role allows `operation` (arrival unlock also needs the key's flag,
    /// which only an admin key honours: a user key stored with it from an older version
    /// still cannot use it).
    public func permits(_ operation: LockOperation) -> Bool {
        switch operation {
        case .lock, .unlock, .unlockWithTimeout, .present: true
        case .arrivalUnlock: mayRequestArrivalUnlock && role.mayHaveArrivalUnlock
        case .setOperatingMode: role == .admin
        }
    }
}

/// Why a key may not be given the arrival-unlock flag; nil when it may.
public func arrivalUnlockRefusal(role: KeyRole, arrival: Bool) -> String? {
    guard arrival, !role.mayHaveArrivalUnlock else { return nil }
    return "a \(role.rawValue) key can never ask for arrival unlocks: only an admin key may (--role admin --arrival)"
}

/// A key store that can also enrol keys: what pairing needs on the lock's side.
public protocol KeyRegistry: KeyStore {
    /// The id the next key gets: above every id ever given, revoked ones included.
    func nextID() throws -> UInt32
    /// Adds a key durably; throws when its id is taken.
    func add(_ key: PhoneKey) throws
}

/// Where the lock finds keys and keeps each key's last accepted counter. The counter must
/// be durable no later than the command's first durable effect (the decision it leads to)
/// and before its answer, or a replay after a restart would pass.
public protocol KeyStore: AnyObject {
    func key(id: UInt32) -> PhoneKey?
    /// As `key(id:)`, telling a read that failed from a key that is not there.
    func lookUp(id: UInt32) -> Result<PhoneKey?, any Error>
    /// Counts a staged counter at once.
    func lastCounter(keyID: UInt32) -> UInt64
    /// Durable before it returns.
    func recordCounter(_ counter: UInt64, keyID: UInt32) throws
    /// What the verifier calls for a command that passed: by default `recordCounter`. A
    /// store that shares its transactions with the decision journal holds the counter
    /// instead and commits it in the same transaction as its next durable write — the
    /// decision the command leads to — so the command's path pays one fsync, not two.
    func stageCounter(_ counter: UInt64, keyID: UInt32) throws
    /// Makes a staged counter durable now, if no write has carried it yet (by default there
    /// is nothing to do). Whoever acts on a verified command runs it before answering.
    func commitStagedCounter() throws
}

extension KeyStore {
    /// The key, nil when the store holds none, or the error when it could not be read (the
    /// non-throwing `key(id:)` fails closed: it says "none" for both).
    public func lookUp(id: UInt32) -> Result<PhoneKey?, any Error> { .success(key(id: id)) }

    public func stageCounter(_ counter: UInt64, keyID: UInt32) throws { try recordCounter(counter, keyID: keyID) }
    public func commitStagedCounter() throws {}
}

/// A key store in memory, for tests and for the phone side's own bookkeeping.
public final class InMemoryKeyStore: KeyRegistry {
    public var keys: [UInt32: PhoneKey] = [:]
    public var counters: [UInt32: UInt64] = [:]
    public var failWrites = false
    public init(_ keys: [PhoneKey] = []) { for k in keys { self.keys[k.id] = k } }
    public func key(id: UInt32) -> PhoneKey? { keys[id] }
    public func lastCounter(keyID: UInt32) -> UInt64 { counters[keyID] ?? 0 }
    public func recordCounter(_ counter: UInt64, keyID: UInt32) throws {
        if failWrites { throw StoreWriteFailed() }
        counters[keyID] = counter
    }
    public func nextID() throws -> UInt32 { (keys.keys.max() ?? 0) + 1 }
    public func add(_ key: PhoneKey) throws {
        if failWrites { throw StoreWriteFailed() }
        guard keys[key.id] == nil else { throw StoreWriteFailed() }
        keys[key.id] = key
    }
    public struct StoreWriteFailed: Error {}
}
