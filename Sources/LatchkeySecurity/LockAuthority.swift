import LatchkeyLockProtocol

/// The ways a key's request reaches the lock. Each authenticates in its own way; what the
/// request may do is then decided by `LockAuthority` alone.
public enum Entry: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A sealed frame over Bluetooth, its tag, challenge and counter checked by `CommandVerifier`.
    case bluetooth
    /// `latchkey mqtt` on the lock's control socket, acting as the key the lock's own
    /// configuration names; the kernel's peer credentials are its authentication.
    case bridge

    public var description: String { rawValue }
}

/// One request, allowed by `LockAuthority` against the key as the store held it at that
/// moment. Nothing else makes one, and the lock's controller moves the bolt for a key only
/// with one (`LockController.submit(_:)`): a new way in cannot skip the decision.
public struct Authorization: Sendable, Equatable {
    public let keyID: UInt32
    public let role: KeyRole
    public let operation: LockOperation
    public let entry: Entry

    init(keyID: UInt32, role: KeyRole, operation: LockOperation, entry: Entry) {
        self.keyID = keyID; self.role = role; self.operation = operation; self.entry = entry
    }
}

/// Why `LockAuthority` refused a request, and how it was counted.
public struct Denial: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// No key with that id (never added).
        case unknownKey
        case revoked
        /// The body could not be read (a frame whose tag verified, so the key's holder's own).
        case malformed
        /// The key, or the whole lock with a failure of this key's counted, is locked out.
        case lockedOut(LockoutPrincipal)
        /// The key's role may not ask for this operation through this entry.
        case notPermitted
    }

    public var reason: Reason
    public var keyID: UInt32
    public var operation: LockOperation?
    public var entry: Entry
    /// Counted against the key (and the lock-wide count): only a failure of the key's own
    /// holder over Bluetooth. A bridge's refusal is the configuration's doing, never counted,
    /// so a misconfigured bridge cannot lock the owner's key out.
    public var counted: Bool
    /// Lockouts this denial engaged (each a DoorLockAlarm in the audit log).
    public var engaged: [LockoutEngagement]

    /// What a phone is told.
    public var rejection: CommandRejection {
        switch reason {
        case .unknownKey: .authenticationFailed
        case .revoked: .unknownKey
        case .malformed: .malformed
        case .lockedOut: .lockedOut
        case .notPermitted: .notAuthorized
        }
    }

    public var description: String {
        switch reason {
        case .unknownKey: "key \(keyID) is not a key of this lock"
        case .revoked: "key \(keyID) is revoked"
        case .malformed: "malformed request of key \(keyID)"
        case .lockedOut(let p): p == .overall ? "the lock is locked out after failed attempts (key \(keyID) failed too)"
                                              : "key \(keyID) is locked out after failed attempts"
        case .notPermitted: "key \(keyID) may not \(operation.map { "\($0)" } ?? "do that") through \(entry == .bridge ? "the bridge" : "Bluetooth")"
        }
    }
}

/// The one place that decides whether a key's request may move the bolt, change the lock's
/// mode or read its log (docs/SECURITY.md, "One gate"): against the key as the store holds it
/// now — present, not revoked, not locked out (never for `lock`: locking is always safe),
/// its role allowing the operation through that entry — and it counts the outcome the same
/// way whichever entry the request came by.
public final class LockAuthority {
    public let keys: any KeyStore
    public let lockout: LockoutGuard

    public init(keys: any KeyStore, lockout: LockoutGuard) {
        self.keys = keys
        self.lockout = lockout
    }

    /// Allows or refuses `operation` (nil: the body could not be read) for `keyID` through
    /// `entry`. The order is fixed: existence, revocation, the body, the lockout, the role.
    /// A refusal during a lockout is not counted, so an attempt then neither extends it nor
    /// floods the audit log.
    public func authorize(_ operation: LockOperation?, keyID: UInt32, via entry: Entry) -> Result<Authorization, Denial> {
        func deny(_ reason: Denial.Reason, count: Bool) -> Result<Authorization, Denial> {
            let counting = count && entry == .bluetooth
            let engaged = counting ? lockout.recordFailure(keyID: keyID) : []
            return .failure(Denial(reason: reason, keyID: keyID, operation: operation, entry: entry,
                                   counted: counting, engaged: engaged))
        }
        guard let key = keys.key(id: keyID) else { return deny(.unknownKey, count: false) }
        guard !key.revoked else { return deny(.revoked, count: false) }
        guard let operation else { return deny(.malformed, count: true) }
        if operation != .lock, let principal = lockout.lockedOut(keyID: keyID) {
            return deny(.lockedOut(principal), count: false)
        }
        guard Self.permits(key, operation, via: entry) else { return deny(.notPermitted, count: true) }
        return .success(Authorization(keyID: keyID, role: key.role, operation: operation, entry: entry))
    }

    /// A failure of the key's holder found after the decision (a replayed counter over
    /// Bluetooth): counted like a denial.
    public func countFailure(keyID: UInt32) -> [LockoutEngagement] {
        lockout.recordFailure(keyID: keyID)
    }

    /// The request was carried out as allowed: over Bluetooth the key's own failure series
    /// ends. Not through the bridge: its key's failures are wrong codes guessed by whoever can
    /// publish, and the household's own commands from Home Assistant must not wipe them.
    /// A `lock` ends nothing either: it passes every lockout (locking is always safe), so a
    /// key whose holder fails on purpose cannot wipe its own count with one.
    public func succeeded(_ authorization: Authorization) {
        guard authorization.entry == .bluetooth, authorization.operation != .lock else { return }
        lockout.recordSuccess(keyID: authorization.keyID)
    }

    /// A wrong unlock code the bridge refused: a failure of the bridge's key, counted in that
    /// key's lockout only (the bridge is one key, and a guesser on the network must not lock
    /// every phone out). Refused like a request when the key is not current or already
    /// locked out (then nothing more is counted). Returns the lockout it engaged, if any.
    public func countWrongCode(keyID: UInt32) -> Result<LockoutEngagement?, Denial> {
        func deny(_ reason: Denial.Reason) -> Result<LockoutEngagement?, Denial> {
            .failure(Denial(reason: reason, keyID: keyID, operation: .unlock, entry: .bridge, counted: false, engaged: []))
        }
        guard let key = keys.key(id: keyID) else { return deny(.unknownKey) }
        guard !key.revoked else { return deny(.revoked) }
        if let principal = lockout.lockedOut(keyID: keyID) { return deny(.lockedOut(principal)) }
        return .success(lockout.recordKeyFailure(keyID: keyID))
    }

    /// What a key may read of the lock's audit log and state now, through `entry`: nil for
    /// nothing (no such key, revoked, or unreadable). Over Bluetooth an admin key reads the
    /// household's, any other key the events naming it. The bridge is the household's
    /// integration (Home Assistant shows the lock's log): its key, while it may act for the
    /// bridge at all (`BridgeKeyRule`), reads the household's; revoked, nothing more.
    public func logScope(keyID: UInt32, via entry: Entry = .bluetooth) -> LogScope? {
        guard let key = keys.key(id: keyID), !key.revoked else { return nil }
        switch entry {
        case .bluetooth: return key.role == .admin ? .household : .ownEvents
        case .bridge: return BridgeKeyRule.problem(key) == nil ? .household : nil
        }
    }

    /// Whether the key is still one the lock holds and has not revoked (a live session's
    /// right to hear the lock's state); nil when the store could not be read, which says
    /// nothing either way (a flaky card must not end every phone's link).
    public func isCurrent(keyID: UInt32) -> Bool? {
        switch keys.lookUp(id: keyID) {
        case .success(let key): key.map { !$0.revoked } ?? false
        case .failure: nil
        }
    }

    static func permits(_ key: PhoneKey, _ operation: LockOperation, via entry: Entry) -> Bool {
        switch entry {
        case .bluetooth: key.permits(operation)
        case .bridge: BridgeKeyRule.problem(key) == nil && (operation == .lock || operation == .unlock)
        }
    }
}

/// How much of the audit log a key reads: the owner's (admin) the household's, anyone
/// else's only the events that name it (a guest learns nothing of who else comes and goes).
public enum LogScope: Sendable, Equatable {
    case household
    case ownEvents
}

/// What the key the bridge acts as must be (docs/SECURITY.md, "The network door"): a current
/// key of role `user` that may not ask for arrival unlocks. The broker's side of the house
/// network is less trusted than a phone in the owner's hand, so it never gets more than a
/// household member's rights. The lock checks it at start; `LockAuthority` at every command.
public enum BridgeKeyRule {
    public enum Problem: Equatable, Sendable, CustomStringConvertible {
        case absent, revoked, admin, arrivalUnlock

        public var description: String {
            switch self {
            case .absent: "is not a key of this lock (never added): add a user key with `latchkey keys add --role user`"
            case .revoked: "is revoked"
            case .admin: "is an admin key; the bridge acts as a household member: give it a key of role user"
            case .arrivalUnlock: "may ask for arrival unlocks; the bridge's key must not"
            }
        }
    }

    /// Nil when `key` may act for the bridge.
    public static func problem(_ key: PhoneKey?) -> Problem? {
        guard let key else { return .absent }
        if key.revoked { return .revoked }
        if key.role != .user { return .admin }
        if key.mayRequestArrivalUnlock { return .arrivalUnlock }
        return nil
    }
}
