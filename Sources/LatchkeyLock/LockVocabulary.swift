// The lock's vocabulary, named and numbered as in the Matter Door Lock cluster (0x0101)
// so that a Matter or Home Assistant bridge is a mapping, not a redesign. Raw values are
// Matter's enum values; our additions sit at 0x80 and above. A nullable Matter enum8 is
// null at 0xFF, which is our `unknown`.

/// Matter LockStateEnum, plus the transient states a UI shows (HA LOCKING/UNLOCKING).
public enum LockState: UInt8, Hashable, Sendable, CaseIterable {
    /// Bolt between its positions; with `DoorLockAlarm(lockJammed)` this is "JAMMED".
    case notFullyLocked = 0
    case locked = 1
    case unlocked = 2
    case locking = 0x80
    case unlocking = 0x81
    /// Matter null: not measured yet (before start-up reads the sensors).
    case unknown = 0xFF
}

/// Matter DoorStateEnum. Only meaningful with a door sensor; `unknown` (null) otherwise.
public enum DoorState: UInt8, Hashable, Sendable, CaseIterable {
    case open = 0
    case closed = 1
    /// The door itself is stuck. No sensor here reports it; kept for the mapping.
    case jammed = 2
    /// Opened while the lock was locked and nobody unlocked it.
    case forcedOpen = 3
    case unspecifiedError = 4
    /// Left open longer than `LockBehaviour.doorAjarTime`.
    case ajar = 5
    case unknown = 0xFF

    /// Whether the door is away from its frame, whatever the reason.
    public var isOpen: Bool { self == .open || self == .forcedOpen || self == .ajar }
}

/// Matter OperatingModeEnum, the modes this lock supports (Vacation and Privacy later).
public enum OperatingMode: UInt8, Hashable, Sendable, CaseIterable {
    case normal = 0
    /// Remote (BLE) lock and unlock refused; button and manual still work.
    case noRemoteLockUnlock = 3
    /// Held unlocked; auto-relock off; lock commands refused.
    case passage = 4
}

/// Matter OperationSourceEnum: how an operation was asked for.
public enum OperationSource: UInt8, Hashable, Sendable, CaseIterable {
    case unspecified = 0
    /// Key, thumbturn or handle, seen by the bolt sensors.
    case manual = 1
    case proprietaryRemote = 2
    case keypad = 3
    /// The lock itself: auto-relock, start-up resolution, a pulse ending.
    case auto = 4
    /// The inside button.
    case button = 5
    case schedule = 6
    /// A phone over BLE.
    case remote = 7
    case rfid = 8
    case biometric = 9
    case aliro = 10

    /// The sources NoRemoteLockUnlock refuses.
    public var isRemote: Bool { self == .remote || self == .proprietaryRemote || self == .aliro }
}

/// Matter LockOperationTypeEnum (the subset this lock performs).
public enum LockOperationType: UInt8, Hashable, Sendable, CaseIterable {
    case lock = 0
    case unlock = 1

    /// The lock state the operation ends in.
    public var targetState: LockState { self == .lock ? .locked : .unlocked }
    /// The transient state while it runs.
    public var movingState: LockState { self == .lock ? .locking : .unlocking }
}

/// Matter OperationErrorEnum, plus our own reasons (0x80+, docs/LOCK-RULES.md, "The audit log").
public enum OperationError: UInt8, Hashable, Sendable, CaseIterable {
    case unspecified = 0
    case invalidCredential = 1
    case disabledUserDenied = 2
    /// The operating mode forbids it (NoRemoteLockUnlock, Passage).
    case restricted = 3
    case insufficientBattery = 4
    /// The bolt did not reach its target within the jam timeout.
    case jammed = 0x80
    /// Locking refused: the door is open.
    case doorOpen = 0x81
    /// The decision could not be made durable, so the actuator did not move.
    case journalFailed = 0x82
    /// Another operation is in progress.
    case busy = 0x83
    /// The lock has not measured its sensors yet.
    case notReady = 0x84
    /// A decision cut short by a crash and not resumed (an unlock past its validity).
    case interrupted = 0x85
    /// The actuator output could not be set.
    case hardwareFault = 0x86
    /// A phone's pairing the lock's owner did not confirm (a code that did not match, the
    /// owner's "no", or no answer in time): its key was never enrolled.
    case pairingNotConfirmed = 0x87
    /// An arrival unlock the lock did not expect: no departure of its phone seen since its
    /// last arrival or bolt command, or the phone came back too long before it asked.
    case arrivalNotExpected = 0x88
}

/// Matter AlarmCodeEnum.
public enum AlarmCode: UInt8, Hashable, Sendable, CaseIterable {
    case lockJammed = 0
    case lockFactoryReset = 1
    case lockRadioPowerCycled = 3
    case wrongCodeEntryLimit = 4
    case frontEscutcheonRemoved = 5
    case doorForcedOpen = 6
    case doorAjar = 7
    case forcedUser = 8
}

/// Who asked: the index of an enrolled phone key (Matter's UserIndex role).
public struct KeyID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public var description: String { "key#\(rawValue)" }
}

/// Identifies one lock/unlock decision in the journal and the event log.
public struct DecisionID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: DecisionID, b: DecisionID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "decision#\(rawValue)" }
}

/// Where the bolt is, as the bolt sensors see it.
public enum BoltPosition: Hashable, Sendable {
    case locked, unlocked, between

    public var lockState: LockState {
        switch self {
        case .locked: .locked
        case .unlocked: .unlocked
        case .between: .notFullyLocked
        }
    }
}
