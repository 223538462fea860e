import LatchkeyTransport

// Start-up reconciliation and the door.
extension LockStateMachine {
    /// Start: take the measured state, then reconcile with the decision a crash left
    /// unfinished (docs/LOCK-RULES.md): a lock decision is always resumed; an unlock only while
    /// still inside its validity window, otherwise it resolves to locked.
    mutating func begin(_ reading: StartupReading, recovered: LockDecision?) {
        phase = .idle
        doorState = reading.doorOpen.map { $0 ? .open : .closed } ?? .unknown
        // Without bolt sensors a fail-secure actuator is locked: its output was just
        // requested inactive. A motor without sensors could be anywhere.
        let measured = reading.bolt?.lockState ?? (hardware.restsLocked ? .locked : .unknown)
        lockState = measured
        if let recovered, recovered.id.rawValue >= nextDecisionID {
            nextDecisionID = recovered.id.rawValue &+ 1
        }
        if doorState == .open, let ajar = behaviour.doorAjarTime {
            actions.append(.startTimer(.doorAjar, ajar))
        }

        guard let recovered else {
            if measured == .locked, reading.lastLogged == .unlocked {
                // The log ends "unlocked" but the bolt is home: the fail-secure output fell back
                // when the last run died (or stopped) while unlocked, with no decision open. The
                // hardware relocked, as at the end of a pulse: logged as that relock, so the
                // log and `status` say what the door is.
                emit(.lockOperation(LockOperationRecord(operation: .lock, source: .auto)), before: .unlocked)
            } else if measured == .unlocked {
                armAutoRelock(after: nil)
            } else if measured != .locked {
                resolveToLocked()
            }
            return
        }
        let movement = Movement(recovered, stateBefore: measured, recovered: true)
        if recovered.operation == .lock || recovered.isValid(at: now) {
            resume(movement)
            return
        }
        // An unlock past its window: nobody decided to open the door now.
        actions.append(.complete(recovered.id, .abandoned))
        emit(.lockOperationError(movement.record, .interrupted), before: .unknown)
        if measured != .locked { resolveToLocked() }
    }

    /// Carries on with a recorded decision (the journal already holds it).
    mutating func resume(_ movement: Movement) {
        guard let id = movement.decision else { return }
        if lockState == movement.operation.targetState {
            actions.append(.complete(id, .succeeded))
            emit(.lockOperation(movement.record), before: .unknown)
            if movement.operation == .unlock { armAutoRelock(after: movement.relockAfter) }
        } else if movement.operation == .lock && doorState.isOpen {
            actions.append(.complete(id, .abandoned))
            emit(.lockOperationError(movement.record, .doorOpen), before: .unknown)
            relockPending = true  // it locks when the door closes
        } else {
            startMoving(movement)
        }
    }

    /// Drives to locked with a decision of the lock's own, or waits for the door to close.
    mutating func resolveToLocked() {
        if doorState.isOpen {
            relockPending = true
            return
        }
        journal(LockDecision(id: takeDecisionID(), operation: .lock, source: .auto,
                             decidedAt: now, deadline: now + behaviour.decisionValidity))
    }

    mutating func doorChanged(open: Bool) {
        if open {
            guard !doorState.isOpen else { return }
            // Opened with the bolt thrown and nobody unlocking: forced.
            let forced = lockState == .locked
            doorState = forced ? .forcedOpen : .open
            emit(.doorStateChange(doorState))
            if forced { emit(.doorLockAlarm(.doorForcedOpen)) }
            if let ajar = behaviour.doorAjarTime { actions.append(.startTimer(.doorAjar, ajar)) }
        } else {
            guard doorState != .closed else { return }
            doorState = .closed
            actions.append(.cancelTimer(.doorAjar))
            emit(.doorStateChange(.closed))
            if relockPending, case .idle = phase, lockState != .locked {
                relockPending = false
                decide(LockCommand(.lock, source: .auto))
            }
        }
    }

    mutating func doorLeftOpen() {
        guard doorState.isOpen else { return }
        if doorState == .open {
            doorState = .ajar
            emit(.doorStateChange(.ajar))
        }
        emit(.doorLockAlarm(.doorAjar))
    }
}
