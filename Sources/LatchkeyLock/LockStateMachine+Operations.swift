import LatchkeyTransport

// Deciding, moving, succeeding and failing.
extension LockStateMachine {
    /// Applies the lock's own rules to a command; an accepted one goes to the journal.
    @discardableResult
    mutating func decide(_ command: LockCommand) -> CommandVerdict {
        let operation = command.type
        if operatingMode == .noRemoteLockUnlock && command.source.isRemote {
            return refuse(command, .restricted)
        }
        if operatingMode == .passage && operation == .lock {
            return refuse(command, .restricted)
        }
        if operation == .lock && doorState.isOpen {
            return refuse(command, .doorOpen)
        }
        if lockState == operation.targetState {
            // Already there: nothing moves. A fresh unlock restarts the relock countdown.
            emit(.lockOperation(LockOperationRecord(operation: operation, source: command.source, who: command.who)))
            if operation == .unlock { armAutoRelock(after: command.relockAfter) }
            return .alreadyThere
        }
        let decision = LockDecision(id: takeDecisionID(), operation: operation, source: command.source, who: command.who,
                                    decidedAt: now, deadline: command.validUntil ?? now + behaviour.decisionValidity,
                                    relockAfter: command.relockAfter)
        journal(decision)
        return .journaling(decision)
    }

    @discardableResult
    mutating func refuse(_ command: LockCommand, _ error: OperationError) -> CommandVerdict {
        emit(.lockOperationError(LockOperationRecord(operation: command.type, source: command.source, who: command.who), error))
        return .refused(error)
    }

    /// Hands the decision to the journal; the actuator waits for `journalRecorded`.
    mutating func journal(_ decision: LockDecision) {
        phase = .journaling(Movement(decision, stateBefore: lockState))
        actions.append(.record(decision))
    }

    mutating func startMoving(_ movement: Movement) {
        phase = .moving(movement)
        lockState = movement.operation.movingState
        relockPending = false
        actions.append(.cancelTimer(.autoRelock))
        actions.append(.drive(movement.operation))
        actions.append(.startTimer(.movement, behaviour.jamTimeout))
    }

    mutating func succeed(_ movement: Movement) {
        phase = .idle
        lockState = movement.operation.targetState
        actuatorEnabled = true
        actions.append(.cancelTimer(.movement))
        if let id = movement.decision { actions.append(.complete(id, .succeeded)) }
        emit(.lockOperation(movement.record), before: movement.stateBefore)
        if movement.operation == .unlock { armAutoRelock(after: movement.relockAfter) }
    }

    /// Jam or actuator fault: stop driving, show NotFullyLocked, disable the actuator.
    mutating func fail(_ movement: Movement, _ error: OperationError) {
        phase = .idle
        lockState = .notFullyLocked
        actuatorEnabled = false
        relockPending = false
        actions.append(.cancelTimer(.movement))
        actions.append(.stopActuator)
        if let id = movement.decision { actions.append(.complete(id, error == .jammed ? .jammed : .hardwareFault)) }
        emit(.lockOperationError(movement.record, error), before: movement.stateBefore)
        if error == .jammed { emit(.doorLockAlarm(.lockJammed)) }
    }

    /// Starts the relock countdown if this lock relocks at all right now.
    mutating func armAutoRelock(after override: Duration?) {
        guard hardware.canHoldUnlocked, operatingMode != .passage, actuatorEnabled,
              let delay = override ?? behaviour.autoRelockTime, delay > .zero else { return }
        actions.append(.startTimer(.autoRelock, delay))
    }

    mutating func autoRelockDue() {
        guard lockState == .unlocked, operatingMode != .passage else { return }
        if doorState.isOpen {
            relockPending = true  // never throw the bolt into an open door: wait for it to close
            return
        }
        decide(LockCommand(.lock, source: .auto))
    }

    /// A fail-secure actuator de-energised by itself (a pulse ended): the bolt springs back.
    mutating func releasedAtRest() {
        guard hardware.restsLocked, lockState == .unlocked else { return }
        actions.append(.cancelTimer(.autoRelock))
        if hardware.hasBoltSensor {
            // Watch it arrive like any movement, jam timer included.
            let movement = Movement(hardwareRelockFrom: lockState)
            phase = .moving(movement)
            lockState = .locking
            actions.append(.startTimer(.movement, behaviour.jamTimeout))
        } else {
            let before = lockState
            lockState = .locked
            emit(.lockOperation(LockOperationRecord(operation: .lock, source: .auto)), before: before)
        }
    }

    /// The bolt sensors moved with no movement under way: a key or thumbturn.
    mutating func boltMovedByHand(to position: BoltPosition) {
        let before = lockState
        guard position.lockState != before else { return }
        lockState = position.lockState
        switch position {
        case .locked:
            relockPending = false
            actions.append(.cancelTimer(.autoRelock))
            emit(.lockOperation(LockOperationRecord(operation: .lock, source: .manual)), before: before)
        case .unlocked:
            emit(.lockOperation(LockOperationRecord(operation: .unlock, source: .manual)), before: before)
            armAutoRelock(after: nil)
        case .between:
            actions.append(.cancelTimer(.autoRelock))
        }
    }

    var buttonCommand: LockCommand {
        switch behaviour.buttonAction {
        case .lock: LockCommand(.lock, source: .button)
        case .unlock: LockCommand(.unlock, source: .button)
        case .toggle: LockCommand(lockState == .locked ? .unlock : .lock, source: .button)
        }
    }

    mutating func changeMode(to mode: OperatingMode, source: OperationSource, who: KeyID?) {
        // A pulse actuator cannot hold a door unlocked.
        guard mode != operatingMode, acceptsOperatingMode(mode) else { return }
        let previous = operatingMode
        operatingMode = mode
        emit(.operatingModeChange(OperatingModeChangeRecord(mode, previous: previous, source: source, who: who)))
        if mode == .passage {
            relockPending = false
            actions.append(.cancelTimer(.autoRelock))
            if lockState != .unlocked { decide(LockCommand(.unlock, source: source)) }
        } else if previous == .passage && lockState == .unlocked {
            armAutoRelock(after: nil)
        }
    }
}
