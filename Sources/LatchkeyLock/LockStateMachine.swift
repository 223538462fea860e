import LatchkeyTransport

/// The lock's decisions, as a pure function of its state and one input at a time (swift-nio
/// HappyEyeballs' `processInput` shape): no I/O, no clock of its own; the shell
/// (`LockController`) performs the returned actions and feeds back what they report. It keeps
/// docs/LOCK-RULES.md: a decision is journalled before the actuator moves (a lock moves even
/// when the journal refuses, and is recorded later), a missed target is a jam, no locking into
/// an open door. Nothing here unlocks without a command, a mode change to Passage, a hand on
/// the bolt, or a recovered unlock still inside its validity window.
public struct LockStateMachine {
    enum Phase {
        case starting
        case idle
        /// A decision waits for `record` to return.
        case journaling(Movement)
        /// The actuator is driving; the jam timer runs.
        case moving(Movement)
    }

    /// One operation under way, with what its events need.
    struct Movement {
        var operation: LockOperationType
        var source: OperationSource
        var who: KeyID?
        /// nil when nothing was decided (the hardware relocking at the end of a pulse).
        var decision: DecisionID?
        var relockAfter: Duration?
        var stateBefore: LockState
        /// A decision a previous run left open, taken up at start.
        var recovered = false

        init(_ decision: LockDecision, stateBefore: LockState, recovered: Bool = false) {
            operation = decision.operation
            source = decision.source
            who = decision.who
            self.decision = decision.id
            relockAfter = decision.relockAfter
            self.stateBefore = stateBefore
            self.recovered = recovered
        }

        init(hardwareRelockFrom stateBefore: LockState) {
            operation = .lock
            source = .auto
            self.stateBefore = stateBefore
        }

        var record: LockOperationRecord {
            LockOperationRecord(operation: operation, source: source, who: who, decision: decision, recovered: recovered)
        }
    }

    public let behaviour: LockBehaviour
    public let hardware: LockHardwareTraits
    public internal(set) var lockState: LockState = .unknown
    public internal(set) var doorState: DoorState = .unknown
    public internal(set) var operatingMode: OperatingMode
    /// Matter ActuatorEnabled: false after a jam until a movement succeeds. While false the
    /// lock makes no movement of its own (auto-relock); commands are still tried.
    public internal(set) var actuatorEnabled = true
    /// An auto-relock found the door open: lock as soon as it closes.
    public internal(set) var relockPending = false
    var phase: Phase = .starting
    var nextDecisionID: UInt64
    var now: Instant = .zero
    var actions: [LockAction] = []

    public init(behaviour: LockBehaviour, hardware: LockHardwareTraits, operatingMode: OperatingMode = .normal,
                firstDecisionID: DecisionID = DecisionID(1)) {
        self.behaviour = behaviour
        self.hardware = hardware
        self.operatingMode = operatingMode
        nextDecisionID = firstDecisionID.rawValue
    }

    /// Whether `setOperatingMode(mode)` would be taken now: before start (restoring), or at
    /// rest — and Passage only with an actuator that can hold the door unlocked.
    public func acceptsOperatingMode(_ mode: OperatingMode) -> Bool {
        switch phase {
        case .starting: true
        case .journaling, .moving: false
        case .idle: mode != .passage || hardware.canHoldUnlocked
        }
    }

    /// Whether an operation is being journaled or driven.
    public var isMoving: Bool {
        switch phase {
        case .journaling, .moving: true
        case .starting, .idle: false
        }
    }

    public var isStarted: Bool {
        if case .starting = phase { return false }
        return true
    }

    /// Feeds one input at `now`; returns the actions to perform, in order.
    public mutating func handle(_ input: LockInput, at now: Instant) -> [LockAction] {
        self.now = now
        actions = []
        switch (phase, input) {
        // Before start nothing is measured: refuse commands, ignore the hardware.
        case (.starting, .start(let reading, let recovered)):
            begin(reading, recovered: recovered)
        case (.starting, .setOperatingMode(let mode, _, _)):
            operatingMode = mode  // restored before start: not a change, nothing to log
        case (.starting, .buttonPressed), (.starting, .doorSensor), (.starting, .boltPosition),
             (.starting, .movementCompleted), (.starting, .actuatorReleased), (.starting, .actuatorFault),
             (.starting, .journalRecorded), (.starting, .journalFailed), (.starting, .timerFired):
            break
        case (.idle, .start), (.journaling, .start), (.moving, .start):
            break  // start happens once

        // Commands: one operation at a time, none before start.
        case (_, .command(let command)):
            rule(on: command)
        case (.idle, .buttonPressed):
            decide(buttonCommand)
        case (.journaling, .buttonPressed), (.moving, .buttonPressed):
            break  // the bolt is already moving: a press is not queued

        // Operating mode changes only at rest; the caller sees the mode unchanged otherwise.
        case (.idle, .setOperatingMode(let mode, let source, let who)):
            changeMode(to: mode, source: source, who: who)
        case (.journaling, .setOperatingMode), (.moving, .setOperatingMode):
            break

        // The door sensor counts in every phase after start.
        case (.idle, .doorSensor(let open)), (.journaling, .doorSensor(let open)), (.moving, .doorSensor(let open)):
            doorChanged(open: open)

        // Bolt sensors: arrival of a movement, or a hand on the thumbturn.
        case (.moving(let movement), .boltPosition(let position)):
            if position.lockState == movement.operation.targetState { succeed(movement) }
        case (.idle, .boltPosition(let position)):
            boltMovedByHand(to: position)
        case (.journaling, .boltPosition):
            break  // recording is synchronous: nothing arrives in between

        // The actuator's own reports.
        case (.moving(let movement), .movementCompleted(let operation)):
            if !hardware.hasBoltSensor && operation == movement.operation { succeed(movement) }
        case (.idle, .movementCompleted), (.journaling, .movementCompleted):
            break  // stale
        case (.moving(let movement), .actuatorReleased):
            // A pulse ended before the sensors saw the bolt retract: it never unlocked.
            if movement.operation == .unlock { fail(movement, .jammed) }
        case (.idle, .actuatorReleased):
            releasedAtRest()
        case (.journaling, .actuatorReleased):
            break
        case (.moving(let movement), .actuatorFault):
            fail(movement, .hardwareFault)
        case (.idle, .actuatorFault), (.journaling, .actuatorFault):
            break

        // The journal's answer.
        case (.journaling(let movement), .journalRecorded(let id)) where movement.decision == id:
            startMoving(movement)
        case (.journaling(let movement), .journalFailed(let id)) where movement.decision == id && movement.operation == .lock:
            startMoving(movement)  // locking is safe: the shell records it once the journal takes writes
        case (.journaling(let movement), .journalFailed(let id)) where movement.decision == id:
            phase = .idle
            emit(.lockOperationError(movement.record, .journalFailed))
        case (_, .journalRecorded), (_, .journalFailed):
            break  // not the decision in flight

        // Timers.
        case (.moving(let movement), .timerFired(.movement)):
            fail(movement, .jammed)
        case (.idle, .timerFired(.autoRelock)):
            autoRelockDue()
        case (_, .timerFired(.doorAjar)):
            doorLeftOpen()
        case (_, .timerFired):
            break  // stale
        }
        return actions
    }

    /// Feeds one command at `now`: what the lock's rules made of it, and the actions to perform.
    public mutating func handle(_ command: LockCommand, at now: Instant) -> (verdict: CommandVerdict, actions: [LockAction]) {
        self.now = now
        actions = []
        let verdict = rule(on: command)
        return (verdict, actions)
    }

    /// One operation at a time, and none before the sensors were read.
    @discardableResult
    private mutating func rule(on command: LockCommand) -> CommandVerdict {
        switch phase {
        case .starting: refuse(command, .notReady)
        case .idle: decide(command)
        case .journaling, .moving: refuse(command, .busy)
        }
    }

    // MARK: Helpers shared by the extensions

    mutating func emit(_ kind: LockEvent.Kind, before: LockState? = nil) {
        actions.append(.emit(LockEvent(kind: kind, time: now, lockStateBefore: before ?? lockState,
                                       lockStateAfter: lockState, doorState: doorState)))
    }

    mutating func takeDecisionID() -> DecisionID {
        defer { nextDecisionID &+= 1 }
        return DecisionID(nextDecisionID)
    }
}
