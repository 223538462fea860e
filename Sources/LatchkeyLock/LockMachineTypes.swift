import LatchkeyTransport

/// A request to lock or unlock (Matter LockDoor / UnlockDoor / UnlockWithTimeout; no
/// Toggle: its outcome depends on a state the sender may not know).
///
/// Authentication, challenge freshness and authorization are checked BEFORE a command
/// reaches the lock: what arrives here is a request someone was entitled to make, and the
/// lock still applies its own rules (operating mode, door, actuator).
public struct LockCommand: Hashable, Sendable {
    public enum Operation: Hashable, Sendable {
        case lock
        case unlock
        /// Unlock, then relock after this time instead of AutoRelockTime.
        case unlockWithTimeout(Duration)
    }

    public var operation: Operation
    public var source: OperationSource
    public var who: KeyID?
    /// End of the command's validity (the challenge's expiry for a BLE command). Recorded
    /// as the decision's deadline; defaults to now + `LockBehaviour.decisionValidity`.
    public var validUntil: Instant?

    public init(_ operation: Operation, source: OperationSource, who: KeyID? = nil, validUntil: Instant? = nil) {
        self.operation = operation
        self.source = source
        self.who = who
        self.validUntil = validUntil
    }

    public var type: LockOperationType {
        switch operation {
        case .lock: .lock
        case .unlock, .unlockWithTimeout: .unlock
        }
    }

    var relockAfter: Duration? {
        if case .unlockWithTimeout(let timeout) = operation { return timeout }
        return nil
    }
}

/// What the inside button does.
public enum ButtonAction: Hashable, Sendable {
    /// Unlock when locked, otherwise lock (the person at the button sees the door).
    case toggle
    /// Request-to-exit: unlock only.
    case unlock
    /// One-touch locking (Matter EnableOneTouchLocking): lock only.
    case lock
}

/// The lock's configurable policy.
public struct LockBehaviour: Hashable, Sendable {
    /// Relock this long after an unlock completes; nil turns auto-relock off. 30 s: Yale's
    /// default (zwave-js yale_template.json `auto_relock_time_180`; docs/LOCK-RULES.md,
    /// "Hardware and failure behaviour").
    public var autoRelockTime: Duration? = .seconds(30)
    /// A movement that has not reached its target by then is a jam. 5 s: the motor
    /// timeout of the EECS 473 smart door (`deadbolt.h` MOTOR_TIMEOUT 5000 ms; docs/LOCK-RULES.md,
    /// "Hardware and failure behaviour").
    public var jamTimeout: Duration = .seconds(5)
    /// Validity window of a decision without its own (button, auto): an unlock cut short
    /// by a crash is resumed only inside it. 5 s: "a few seconds", the lifetime of a
    /// lock-issued challenge, longer than a systemd restart (docs/LOCK-RULES.md, "Decisions
    /// that survive death").
    public var decisionValidity: Duration = .seconds(5)
    /// Door open this long becomes Ajar with a DoorAjar alarm; nil turns it off (the
    /// default: no source gives a typical value, so the board or user chooses).
    public var doorAjarTime: Duration? = nil
    public var buttonAction: ButtonAction = .toggle

    public init() {}
}

/// What the lock can know and do, derived from its wiring.
public struct LockHardwareTraits: Hashable, Sendable {
    public var hasDoorSensor: Bool
    /// Bolt position inputs decide when a movement has succeeded (else the actuator does).
    public var hasBoltSensor: Bool
    /// False for a pulse actuator: it cannot stay unlocked (no Passage, no auto-relock).
    public var canHoldUnlocked: Bool
    /// True when a de-energised actuator leaves the bolt locked (hold, pulse: fail-secure).
    /// A motor stays wherever it stopped.
    public var restsLocked: Bool

    public init(hasDoorSensor: Bool, hasBoltSensor: Bool, canHoldUnlocked: Bool, restsLocked: Bool) {
        self.hasDoorSensor = hasDoorSensor
        self.hasBoltSensor = hasBoltSensor
        self.canHoldUnlocked = canHoldUnlocked
        self.restsLocked = restsLocked
    }
}

/// The sensors read once at start, before anything else.
public struct StartupReading: Hashable, Sendable {
    /// nil without a door sensor (or when it could not be read).
    public var doorOpen: Bool?
    /// nil without bolt sensors.
    public var bolt: BoltPosition?
    /// The lock state the audit log's last event says (what `latchkey status` prints); nil
    /// with an empty or unreadable log.
    public var lastLogged: LockState?

    public init(doorOpen: Bool?, bolt: BoltPosition?, lastLogged: LockState? = nil) {
        self.doorOpen = doorOpen
        self.bolt = bolt
        self.lastLogged = lastLogged
    }
}

/// The timers the lock runs. One of each at most.
public enum LockTimer: Hashable, Sendable, CaseIterable {
    /// Jam detection for the movement in progress.
    case movement
    case autoRelock
    case doorAjar
}

/// Everything that can happen to the lock.
public enum LockInput: Hashable, Sendable {
    case start(StartupReading, recovered: LockDecision?)
    case command(LockCommand)
    case buttonPressed
    case setOperatingMode(OperatingMode, source: OperationSource, who: KeyID? = nil)
    /// Debounced door sensor change.
    case doorSensor(open: Bool)
    /// Debounced bolt sensor change.
    case boltPosition(BoltPosition)
    /// The actuator finished a command (only reported without bolt sensors).
    case movementCompleted(LockOperationType)
    /// The actuator de-energised by itself (a pulse ended).
    case actuatorReleased
    /// Setting the actuator output failed.
    case actuatorFault
    case journalRecorded(DecisionID)
    case journalFailed(DecisionID)
    case timerFired(LockTimer)
}

/// What the shell must do, in order.
public enum LockAction: Hashable, Sendable {
    /// Make the decision durable, then report `journalRecorded` or `journalFailed`.
    case record(LockDecision)
    case complete(DecisionID, DecisionOutcome)
    case drive(LockOperationType)
    /// De-energise every actuator output.
    case stopActuator
    /// Start (or restart) the timer.
    case startTimer(LockTimer, Duration)
    case cancelTimer(LockTimer)
    case emit(LockEvent)
}
