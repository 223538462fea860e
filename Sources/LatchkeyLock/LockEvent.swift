import LatchkeyTransport

/// One entry of the lock's audit log, in the shape of the Matter Door Lock events
/// (LockOperation, LockOperationError, DoorLockAlarm, DoorStateChange, LockUserChange),
/// each with the lock state before and after and the time it happened. Matter reports
/// success and failure as two events; the kind is the result.
public struct LockEvent: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// A lock or unlock that completed.
        case lockOperation(LockOperationRecord)
        /// A lock or unlock that was refused or failed, and why.
        case lockOperationError(LockOperationRecord, OperationError)
        case doorLockAlarm(AlarmCode)
        case doorStateChange(DoorState)
        /// A phone key was added (paired) or cleared (revoked): Matter LockUserChange.
        case lockUserChange(KeyChangeRecord)
        /// The operating mode changed. Our addition: Matter reports it only as a change of
        /// the OperatingMode attribute, which leaves no trace in an audit log.
        case operatingModeChange(OperatingModeChangeRecord)
        /// An arrival unlock refused as a suspected relay, with the figures measured. Ours.
        case suspectedRelay(SuspectedRelayRecord)
    }

    public var kind: Kind
    /// On the lock's monotonic clock (the loop's `now`).
    public var time: Instant
    public var lockStateBefore: LockState
    public var lockStateAfter: LockState
    /// The door after the event.
    public var doorState: DoorState

    public init(kind: Kind, time: Instant, lockStateBefore: LockState, lockStateAfter: LockState, doorState: DoorState) {
        self.kind = kind
        self.time = time
        self.lockStateBefore = lockStateBefore
        self.lockStateAfter = lockStateAfter
        self.doorState = doorState
    }
}

/// The fields of a LockOperation / LockOperationError event: what, how, who.
public struct LockOperationRecord: Hashable, Sendable {
    /// nil only in a LockOperationError for a command refused before its operation could be
    /// read — a revoked or unknown key, a forged tag, a stale challenge, a malformed frame —
    /// or one that is no lock operation (a refused mode change): Matter's field is
    /// mandatory, and guessing "unlock" would put an attempt in the log that nobody made.
    public var operation: LockOperationType?
    public var source: OperationSource
    public var who: KeyID?
    /// The journal entry behind it; nil when nothing was decided (a manual turn, a refusal).
    public var decision: DecisionID?
    /// The event closes a decision a previous run of the lock left open (it died between
    /// recording the decision and completing it): the decision was resumed, or abandoned
    /// (`interrupted`), or deferred (`doorOpen`) at start. Every recovery ends in exactly
    /// one such event, so the audit log shows each one. Matter's LockOperation has no field
    /// for it; a bridge maps it to the same event (source and user unchanged).
    public var recovered: Bool

    public init(operation: LockOperationType?, source: OperationSource, who: KeyID? = nil, decision: DecisionID? = nil,
                recovered: Bool = false) {
        self.operation = operation
        self.source = source
        self.who = who
        self.decision = decision
        self.recovered = recovered
    }
}

extension LockEvent: CustomStringConvertible {
    public var description: String {
        let what: String
        switch kind {
        case .lockOperation(let record): what = "LockOperation(\(record))"
        case .lockOperationError(let record, let error): what = "LockOperationError(\(record), \(error))"
        case .doorLockAlarm(let code): what = "DoorLockAlarm(\(code))"
        case .doorStateChange(let state): what = "DoorStateChange(\(state))"
        case .lockUserChange(let change): what = "LockUserChange(\(change))"
        case .operatingModeChange(let change): what = "OperatingModeChange(\(change))"
        case .suspectedRelay(let r): what = "SuspectedRelay(\(r))"
        }
        return "\(time) \(what) lock \(lockStateBefore)->\(lockStateAfter) door \(doorState)"
    }
}

extension LockOperationRecord: CustomStringConvertible {
    public var description: String {
        var text = "\(operation.map { "\($0)" } ?? "unknown operation") by \(source)"
        if let who { text += " \(who)" }
        if let decision { text += " \(decision)" }
        if recovered { text += " recovered" }
        return text
    }
}

/// The fields of a LockUserChange event (Matter event 0x04): which key, what happened to
/// it, and how it was asked for (Remote for BLE pairing, Unspecified for the local CLI).
public struct KeyChangeRecord: Hashable, Sendable, CustomStringConvertible {
    public var change: DataOperationType
    public var source: OperationSource
    public var key: KeyID

    public init(_ change: DataOperationType, source: OperationSource, key: KeyID) {
        self.change = change
        self.source = source
        self.key = key
    }

    public var description: String { "\(change) \(key) by \(source)" }
}

/// The fields of an OperatingModeChange event: the new mode, the one before, how and by
/// whom (a remote admin key; `auto` when the lock itself changed it at start).
public struct OperatingModeChangeRecord: Hashable, Sendable, CustomStringConvertible {
    public var mode: OperatingMode
    public var previous: OperatingMode
    public var source: OperationSource
    public var who: KeyID?

    public init(_ mode: OperatingMode, previous: OperatingMode, source: OperationSource, who: KeyID? = nil) {
        self.mode = mode
        self.previous = previous
        self.source = source
        self.who = who
    }

    public var description: String {
        "\(previous) -> \(mode) by \(source)" + (who.map { " \($0)" } ?? "")
    }
}

/// Matter DataOperationTypeEnum.
public enum DataOperationType: UInt8, Hashable, Sendable, CaseIterable {
    case add = 0
    case clear = 1
    case modify = 2
}
