import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity

// The domain's enums onto the catalogue's words (LatchkeyEvents sits below the domain and
// cannot name them). Each switch is exhaustive both ways: a new case on either side fails to
// compile here, and EventWordsDomainTests checks each word is the text the agents printed for
// the case before their fields were typed.

extension Event.LockState {
    public init(_ state: LatchkeyLock.LockState) {
        switch state {
        case .notFullyLocked: self = .notFullyLocked
        case .locked: self = .locked
        case .unlocked: self = .unlocked
        case .locking: self = .locking
        case .unlocking: self = .unlocking
        case .unknown: self = .unknown
        }
    }
}

extension Event.DoorState {
    public init(_ state: LatchkeyLock.DoorState) {
        switch state {
        case .open: self = .open
        case .closed: self = .closed
        case .jammed: self = .jammed
        case .forcedOpen: self = .forcedOpen
        case .unspecifiedError: self = .unspecifiedError
        case .ajar: self = .ajar
        case .unknown: self = .unknown
        }
    }
}

extension Event.OperatingMode {
    public init(_ mode: LatchkeyLock.OperatingMode) {
        switch mode {
        case .normal: self = .normal
        case .noRemoteLockUnlock: self = .noRemoteLockUnlock
        case .passage: self = .passage
        }
    }
}

extension Event.Operation {
    /// A command's operation, as the lock protocol names it (`arrival-unlock`).
    public init(_ operation: LockOperation) {
        switch operation {
        case .lock: self = .lock
        case .unlock: self = .unlock
        case .unlockWithTimeout: self = .unlockWithTimeout
        case .arrivalUnlock: self = .arrivalUnlock
        case .present: self = .present
        case .setOperatingMode: self = .setOperatingMode
        }
    }

    /// An operation the lock performs (a decision's, the bridge's).
    public init(_ operation: LockOperationType) {
        switch operation {
        case .lock: self = .lock
        case .unlock: self = .unlock
        }
    }
}

extension Event.KeyRole {
    public init(_ role: LatchkeySecurity.KeyRole) {
        switch role {
        case .admin: self = .admin
        case .user: self = .user
        }
    }
}

extension Event.RadioState {
    public init(_ state: ManagerState) {
        switch state {
        case .unknown: self = .unknown
        case .resetting: self = .resetting
        case .unsupported: self = .unsupported
        case .unauthorized: self = .unauthorized
        case .poweredOff: self = .poweredOff
        case .poweredOn: self = .poweredOn
        }
    }
}

extension Event.CommandRejection {
    public init(_ rejection: LatchkeyLockProtocol.CommandRejection) {
        switch rejection {
        case .malformed: self = .malformed
        case .unknownKey: self = .unknownKey
        case .authenticationFailed: self = .authenticationFailed
        case .staleChallenge: self = .staleChallenge
        case .replayedCounter: self = .replayedCounter
        case .notAuthorized: self = .notAuthorized
        case .lockedOut: self = .lockedOut
        case .refusedByPolicy: self = .refusedByPolicy
        case .actuatorDisabled: self = .actuatorDisabled
        case .storageFailure: self = .storageFailure
        case .pairingClosed: self = .pairingClosed
        case .busy: self = .busy
        case .noSession: self = .noSession
        }
    }
}

extension Event.ArrivalRefusal {
    public init(_ refusal: ArrivalPolicy.Refusal) {
        switch refusal {
        case .doorOpen: self = .doorOpen
        case .noRemoteMode: self = .noRemoteMode
        case .recentManualUnlock: self = .recentManualUnlock
        case .recentOtherArrival: self = .recentOtherArrival
        case .noDepartureSeen: self = .noDepartureSeen
        case .returnedLongAgo: self = .returnedLongAgo
        case .suspectedRelay: self = .suspectedRelay
        }
    }
}

extension Event.NotEnrolledReason {
    public init(_ reason: LatchkeySecurity.NotEnrolledReason) {
        switch reason {
        case .codeMismatch: self = .codeMismatch
        case .refusedByOwner: self = .refusedByOwner
        case .timedOut: self = .timedOut
        case .storageFailure: self = .storageFailure
        }
    }
}
