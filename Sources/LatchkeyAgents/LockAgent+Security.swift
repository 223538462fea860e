import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity

// The lock agent's security duties besides verifying commands (docs/SECURITY.md): the
// audit trail of failures and lockouts, the admin-only operations, and pairing.
extension LockAgent {
    // MARK: Failures and lockouts in the audit log

    /// Each counted failure is a LockOperationError in the audit log, and each lockout it
    /// engaged a DoorLockAlarm(wrongCodeEntryLimit) (docs/LOCK-RULES.md rule 5). A refusal
    /// during a lockout is not logged: the lockout already was, and an attacker should not
    /// be able to flush the log's retention with refused frames.
    func audit(_ failure: CommandFailure) {
        guard failure.counted else { return }
        // A frame refused before it was opened (a revoked key, a forged tag...) has no known
        // operation, and a refused mode change is no lock operation: both are logged
        // without one, never as an unlock nobody asked for.
        let record = LockOperationRecord(operation: failure.operation.flatMap(Self.lockOperation), source: .remote,
                                         who: failure.keyID.map { KeyID($0) })
        lockEvent(securityEvent(.lockOperationError(record, Self.operationError(for: failure))))
        for e in failure.engaged {
            var fields = [("principal", "\(e.principal)"), ("level", "\(e.level)"), ("seconds", "\(e.duration.components.seconds)")]
            // A key's own lockout names the key: journald's KEY_ID= (`AgentEvent.journaldEntry`).
            if case .key(let id) = e.principal { fields.append(("key", "\(id)")) }
            events.emit(AgentEvent("lock.lockout", time: loop.now, fields))
            lockEvent(securityEvent(.doorLockAlarm(.wrongCodeEntryLimit)))
        }
    }

    /// The Matter operation a command asked for; nil for those that move no bolt.
    static func lockOperation(_ operation: LockOperation) -> LockOperationType? {
        switch operation {
        case .lock: .lock
        case .unlock, .unlockWithTimeout, .arrivalUnlock: .unlock
        case .present, .setOperatingMode: nil
        }
    }

    static func operationError(for failure: CommandFailure) -> OperationError {
        if failure.revoked { return .disabledUserDenied }
        return failure.rejection == .notAuthorized ? .restricted : .invalidCredential
    }

    /// An event about the lock's security that moves nothing: the states are as they are.
    func securityEvent(_ kind: LockEvent.Kind) -> LockEvent {
        LockEvent(kind: kind, time: loop.now, lockStateBefore: controller.lockState,
                  lockStateAfter: controller.lockState, doorState: controller.doorState)
    }

    // MARK: Admin operations

    /// `setOperatingMode`, which the verifier let through only for an admin key. The new
    /// mode is durable before it applies (`LockAgent+OperatingMode.swift`).
    func setOperatingMode(_ raw: UInt8?, key: UInt32) -> CommandRejection? {
        guard let raw, let mode = OperatingMode(rawValue: raw) else { return .malformed }
        guard controller.machine.acceptsOperatingMode(mode) else {
            emit("lock.command_refused", ["key": "\(key)", "op": "set-operating-mode", "mode": "\(mode)"])
            return .refusedByPolicy
        }
        if mode != controller.operatingMode, let failed = persistOperatingMode(mode) { return failed }
        controller.setOperatingMode(mode, source: .remote, who: KeyID(key))
        emit("lock.operating_mode", ["key": "\(key)", "mode": "\(mode)"])
        publishStatus()
        return nil
    }

    // MARK: Pairing

    /// Opens a pairing window on the lock's side (docs/LOCK-RULES.md rule 3); false when this
    /// lock has no pairing set up or a window is open already. The new key, if any, is
    /// logged as a LockUserChange(add) before `done` hears of it.
    @discardableResult
    public func openPairingWindow(for duration: Duration, offer: PairingOffer,
                                  done: @escaping (PairingOutcome) -> Void) -> Bool {
        guard let pairing else { return false }
        let opened = pairing.open(for: duration, offer: offer) { [weak self] outcome in
            if let self {
                switch outcome {
                case .paired(let key, let code):
                    lockEvent(securityEvent(.lockUserChange(KeyChangeRecord(.add, source: .remote, key: KeyID(key.id)))))
                    emit("lock.key_paired", ["key": "\(key.id)", "name": key.name, "role": key.role.rawValue,
                                             "arrival": "\(key.mayRequestArrivalUnlock)", "code": code])
                case .closedUnused:
                    emit("lock.pairing_closed")
                }
            }
            done(outcome)
        }
        if opened {
            emit("lock.pairing_open", ["seconds": "\(duration.components.seconds)", "role": offer.role.rawValue,
                                       "fingerprint": pairing.identity.fingerprint])
        }
        return opened
    }

    public func closePairingWindow() { pairing?.close() }

    public var lockFingerprint: String? { pairing?.identity.fingerprint }

    func pairingRequest(_ bytes: [UInt8], from central: Central) -> CommandRejection? {
        guard let pairing else { return .pairingClosed }
        switch pairing.handleRequest(bytes, on: central.linkID) {
        case .failure(let why):
            emit("lock.pairing_refused", ["central": "\(central.identifier)", "reason": "\(why)"])
            return why
        case .success:
            return nil
        }
    }
}
