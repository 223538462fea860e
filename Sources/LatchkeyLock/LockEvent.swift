import LatchkeyTransport

/// One entry of the lock's audit log, in the shape of the Matter Door Lock events
/// (LockOperation, LockOperationError, DoorLockAlarm, DoorStateChange), each with the lock
/// state before and after and the time it happened. Matter reports success and failure
/// as two events; the kind is the result.
public struct LockEvent: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// A lock or unlock that completed.
        case lockOperation(LockOperationRecord)
        /// A lock or unlock that was refused or failed, and why.
        case lockOperationError(LockOperationRecord, OperationError)
        case doorLockAlarm(AlarmCode)
        case doorStateChange(DoorState)
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
    public var operation: LockOperationType
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

    public init(operation: LockOperationType, source: OperationSource, who: KeyID? = nil, decision: DecisionID? = nil,
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
        }
        return "\(time) \(what) lock \(lockStateBefore)->\(lockStateAfter) door \(doorState)"
    }
}

extension LockOperationRecord: CustomStringConvertible {
    public var description: String {
        var text = "\(operation) by \(source)"
        if let who { text += " \(who)" }
        if let decision { text += " \(decision)" }
        if recovered { text += " recovered" }
        return text
    }
}
