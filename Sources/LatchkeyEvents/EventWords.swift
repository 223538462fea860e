// The closed sets of words the catalogue's fields print. Each case's raw value is the word on
// the line, as the agents printed it before the fields were typed (a lock state is the domain
// enum's case name, an operation is its protocol name: `arrival-unlock`). The modules that own
// the domain enums map theirs onto these with an exhaustive switch (LatchkeyAgents'
// EventWords+Domain.swift), so a new domain case fails to compile until it has its word here.

extension Event {
    /// A lock state (Matter LockStateEnum and the moving states).
    public enum LockState: String, EventWord {
        case notFullyLocked, locked, unlocked, locking, unlocking, unknown
        public static var setName: String { "lock state" }
    }

    /// A door sensor's state (Matter DoorStateEnum).
    public enum DoorState: String, EventWord {
        case open, closed, jammed, forcedOpen, unspecifiedError, ajar, unknown
        public static var setName: String { "door state" }
    }

    /// An operating mode (Matter OperatingModeEnum, the modes this lock supports).
    public enum OperatingMode: String, EventWord {
        case normal, noRemoteLockUnlock, passage
        public static var setName: String { "operating mode" }
    }

    /// An operation a key or the bridge asks for, as the lock protocol names it.
    public enum Operation: String, EventWord {
        case lock, unlock
        case unlockWithTimeout = "unlock-with-timeout"
        case arrivalUnlock = "arrival-unlock"
        case present
        case setOperatingMode = "set-operating-mode"
        public static var setName: String { "operation" }
    }

    /// A key's role.
    public enum KeyRole: String, EventWord {
        case admin, user
        public static var setName: String { "key role" }
    }

    /// The radio's power state (the manager's state).
    public enum RadioState: String, EventWord {
        case unknown, resetting, unsupported, unauthorized, poweredOff, poweredOn
        public static var setName: String { "radio state" }
    }

    /// Where the phone believes its owner is, relative to the door.
    public enum Presence: String, EventWord {
        case unknown, home, leaving, away, nearby, arriving
        public static var setName: String { "presence" }
    }

    /// The phone's link to the lock, as its peripheral's state.
    public enum LinkState: String, EventWord {
        case disconnected, connecting, connected, disconnecting
        public static var setName: String { "link state" }
    }

    /// Why the phone asks for a new connection interval.
    public enum IntervalReason: String, EventWord {
        case idle, busy
        public static var setName: String { "interval reason" }
    }

    /// The challenge a command starts with when one was already there.
    public enum ChallengeAtHand: String, EventWord {
        case ahead, held
        public static var setName: String { "challenge" }
    }

    /// Whether a session was open when a reply could not be opened.
    public enum SessionAtReply: String, EventWord {
        case noSession = "none"
        case open
        public static var setName: String { "session" }
    }

    /// Who asked on the control socket and was refused.
    public enum ControlPeer: String, EventWord {
        case bridge, other
        public static var setName: String { "peer" }
    }

    /// Why the lock rejected a command frame, as the lock protocol's rejection describes itself.
    public enum CommandRejection: String, EventWord {
        case malformed = "malformed command"
        case unknownKey = "revoked key"
        case authenticationFailed = "authentication failed"
        case staleChallenge = "stale challenge"
        case replayedCounter = "replayed counter"
        case notAuthorized = "not authorized"
        case lockedOut = "locked out"
        case refusedByPolicy = "refused by policy"
        case actuatorDisabled = "actuator disabled"
        case storageFailure = "storage failure"
        case pairingClosed = "pairing window closed"
        case busy = "busy: the bolt is moving"
        case noSession = "no session on this link"
        public static var setName: String { "rejection" }
    }

    /// Why the arrival policy refused an arrival unlock.
    public enum ArrivalRefusal: String, EventWord {
        case doorOpen = "door open"
        case noRemoteMode = "no-remote operating mode"
        case recentManualUnlock = "recent manual unlock"
        case recentOtherArrival = "another phone arrived moments ago"
        case noDepartureSeen = "no departure seen since the last arrival"
        case returnedLongAgo = "the phone came back too long ago"
        case suspectedRelay = "suspected relay"
        public static var setName: String { "arrival refusal" }
    }

    /// Why a pending pairing was not enrolled.
    public enum NotEnrolledReason: String, EventWord {
        case codeMismatch = "code-mismatch"
        case refusedByOwner = "refused-by-owner"
        case timedOut = "timed-out"
        case storageFailure = "storage-failure"
        public static var setName: String { "not enrolled because" }
    }
}
