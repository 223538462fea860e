// What `latchkey log --format csv|json` exports beside the sentence: the event's Matter name
// and the key it concerns, as separate fields a script can filter on.

extension LockEvent {
    /// The Matter Door Lock event name (our own additions named in the same style).
    public var kindName: String {
        switch kind {
        case .lockOperation: "LockOperation"
        case .lockOperationError: "LockOperationError"
        case .doorLockAlarm: "DoorLockAlarm"
        case .doorStateChange: "DoorStateChange"
        case .lockUserChange: "LockUserChange"
        case .operatingModeChange: "OperatingModeChange"
        case .suspectedRelay: "SuspectedRelay"
        }
    }

    /// The phone key the event is about: who operated, who was refused, which key was added
    /// or revoked, who changed the mode; nil when no key was involved.
    public var keyID: KeyID? {
        switch kind {
        case .lockOperation(let record), .lockOperationError(let record, _): record.who
        case .lockUserChange(let change): change.key
        case .operatingModeChange(let change): change.who
        case .suspectedRelay(let record): record.who
        case .doorLockAlarm, .doorStateChange: nil
        }
    }
}
