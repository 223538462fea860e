import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySecurity
import LatchkeyTransport

// The lock agent's security duties besides verifying commands (docs/SECURITY.md): the
// audit trail of failures and lockouts, the admin-only operations, and pairing.
extension LockAgent {
    // MARK: Failures and lockouts in the audit log

    /// Each counted failure is a LockOperationError in the audit log, and each lockout it
    /// engaged a DoorLockAlarm(wrongCodeEntryLimit) (docs/LOCK-RULES.md rule 5). A refusal
    /// during a lockout is not logged: the lockout already was, and an attacker should not
    /// be able to flush the log's retention with refused frames.
    func audit(_ failure: CommandFailure) {
        // A stranger's frames are logged once per link, when they get it dropped (the
        // caller sees to "once"): a flood of them would push the owner's history out.
        guard failure.counted || failure.revoked || failure.dropLink else { return }
        // A revoked key's phone re-links for ever, and strangers come back: neither counts
        // for a key, so their entries are paced rather than pushing the household's out.
        if !failure.counted {
            guard pace(failure.revoked ? .revokedKey(failure.keyID ?? 0) : .strangers) else { return }
        }
        // A frame refused before it was opened (a revoked key, a forged tag...) has no known
        // operation, and a refused mode change is no lock operation: both are logged
        // without one, never as an unlock nobody asked for.
        auditRefusal(failure.operation, source: .remote, key: failure.keyID, error: Self.operationError(for: failure),
                     engaged: failure.engaged)
    }

    /// A refusal by `LockAuthority` of a request that did not come over Bluetooth, filed as
    /// a phone's would be. A refusal during a lockout is not logged (the lockout was).
    func audit(_ denial: Denial) {
        let error: OperationError
        switch denial.reason {
        case .lockedOut: return
        case .revoked:
            guard pace(.revokedKey(denial.keyID)) else { return }
            error = .disabledUserDenied
        case .notPermitted: error = .restricted
        case .unknownKey, .malformed: error = .invalidCredential
        }
        auditRefusal(denial.operation, source: denial.entry == .bluetooth ? .remote : .proprietaryRemote,
                     key: denial.keyID, error: error, engaged: denial.engaged)
    }

    /// Whether a refusal of `source` goes into the audit log now (`RefusalAuditPacer`); what
    /// is left out is said as a `lock.audit_paced` event, with the count since the last entry.
    private func pace(_ source: RefusalAuditPacer.Source) -> Bool {
        let (admitted, leftOut) = auditPacer.admit(source, at: loop.now)
        if !admitted || leftOut > 0 {
            let who = if case .revokedKey(let k) = source { "revoked key \(k)" } else { "strangers" }
            emit(.lockAuditPaced(source: who, leftOut: leftOut, logged: admitted))
        }
        return admitted
    }

    /// One refused request in the audit log (LockOperationError with the key and the way it
    /// came in), and a DoorLockAlarm for each lockout it engaged.
    private func auditRefusal(_ operation: LockOperation?, source: OperationSource, key: UInt32?, error: OperationError,
                              engaged: [LockoutEngagement]) {
        let record = LockOperationRecord(operation: operation.flatMap(Self.lockOperation), source: source,
                                         who: key.map { KeyID($0) })
        lockEvent(securityEvent(.lockOperationError(record, error)))
        for e in engaged {
            // A key's own lockout names the key: journald's KEY_ID= (`AgentEvent.journaldEntry`).
            var key: UInt32?
            if case .key(let id) = e.principal { key = id }
            emit(.lockLockout(principal: "\(e.principal)", level: e.level, seconds: e.duration,
                              key: key))
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
    func setOperatingMode(_ raw: UInt8?, authorized: Authorization) -> CommandRejection? {
        let key = authorized.keyID
        guard let raw, let mode = OperatingMode(rawValue: raw) else { return .malformed }
        guard controller.machine.acceptsOperatingMode(mode) else {
            emit(.lockCommandRefused(key: key, op: .setOperatingMode, mode: .init(mode)))
            return .refusedByPolicy
        }
        if mode != controller.operatingMode, let failed = persistOperatingMode(mode) { return failed }
        controller.setOperatingMode(mode, authorized: authorized)
        emit(.lockOperatingMode(key: key, mode: .init(mode)))
        publishStatus()
        return nil
    }

    // MARK: Pairing

    /// Opens a pairing window on the lock's side (docs/LOCK-RULES.md rule 3); false when this
    /// lock has no pairing set up or a window is open already. `asked` hears of the phone
    /// whose key waits for the owner's confirmation (its code); `done` of the end. The new
    /// key, if any, is logged as a LockUserChange(add), and a key the owner did not confirm as
    /// a LockOperationError(pairingNotConfirmed), before `done` hears of it.
    @discardableResult
    public func openPairingWindow(for duration: Duration, offer: PairingOffer,
                                  asked: @escaping (PendingPairing) -> Void = { _ in },
                                  done: @escaping (PairingOutcome) -> Void) -> Bool {
        guard let pairing else { return false }
        let opened = pairing.open(for: duration, offer: offer, asked: { [weak self] pending in
            self?.emit(.lockPairingPending(key: pending.key.id, name: PairingName.escaped(pending.key.name),
                                           code: pending.comparisonCode))
            self?.advertise()
            asked(pending)
        }, done: { [weak self] outcome in
            if let self {
                pairingEnded(outcome)
                advertise()
            }
            done(outcome)
        })
        if opened {
            emit(.lockPairingOpen(seconds: duration, role: .init(offer.role),
                                  fingerprint: pairing.identity.fingerprint))
            advertise()
        }
        return opened
    }

    private func pairingEnded(_ outcome: PairingOutcome) {
        switch outcome {
        case .paired(let key, let code):
            lockEvent(securityEvent(.lockUserChange(KeyChangeRecord(.add, source: .remote, key: KeyID(key.id)))))
            emit(.lockKeyPaired(key: key.id, name: PairingName.escaped(key.name), role: .init(key.role),
                                arrival: key.mayRequestArrivalUnlock, code: code))
        case .notEnrolled(let pending, let reason):
            // The link that asked holds no key after all: a stranger's again, timed like one.
            for (link, key) in pairingLinks where key == pending.key.id {
                pairingLinks[link] = nil
                if let central = peripheral.centrals.first(where: { $0.linkID == link }) { armUnauthenticatedTimer(for: central) }
            }
            // The key never existed for the verifier; the attempt is in the audit log all the same.
            let record = LockOperationRecord(operation: nil, source: .remote, who: KeyID(pending.key.id))
            lockEvent(securityEvent(.lockOperationError(record, .pairingNotConfirmed)))
            emit(.lockPairingNotEnrolled(key: pending.key.id, name: PairingName.escaped(pending.key.name),
                                         reason: .init(reason)))
        case .closedUnused:
            emit(.lockPairingClosed)
        }
    }

    /// The owner's answer to the pending pairing (`latchkey pair`): the code the phone shows.
    /// Nil when no key is pending.
    @discardableResult
    public func confirmPairing(code: String) -> PairingOutcome? { pairing?.confirm(code: code) }

    /// The owner said the codes differ; nil when no key is pending.
    @discardableResult
    public func rejectPairing() -> PairingOutcome? { pairing?.reject() }

    public func closePairingWindow() { pairing?.close() }

    public var lockFingerprint: String? { pairing?.identity.fingerprint }

    /// Pairing writes seen, refused and not enrolled since the agent started (`status`).
    public var pairingCounts: PairingCounts { pairing?.counts ?? PairingCounts() }

    /// The lock's advertising: its service UUID (what a phone filters on) and the name the
    /// owner chose, and while a pairing window takes a request, the pairing beacon in the
    /// scan response (`PairingBeacon`). Nothing else.
    var advertisement: Advertisement {
        var beacon: AdvertisingData?
        if let pairing, pairing.isOpen, pairing.pending == nil {
            let octets = PairingKeyAgreement.fingerprintOctets(of: pairing.identity.publicKey)
            beacon = AdvertisingData(flags: nil, manufacturerData: PairingBeacon(fingerprint: octets).manufacturerData)
        }
        return Advertisement(data: AdvertisingData(serviceUUIDs: [LockServiceUUID.service], localName: configuration.name),
                             scanResponse: beacon, interval: configuration.advertisingInterval)
    }

    /// (Re)starts advertising with the current `advertisement` (the beacon comes and goes
    /// with the pairing window), but never while every link is taken: that limit belongs to
    /// `advertiseWhileLinksAreFree`.
    func advertise() {
        guard peripheral.state == .poweredOn, service != nil else { return }
        guard peripheral.centrals.count < configuration.maximumLinks else { return }
        peripheral.startAdvertising(advertisement)
    }

    func pairingRequest(_ bytes: [UInt8], from central: Central) -> CommandRejection? {
        guard let pairing else { return .pairingClosed }
        switch pairing.handleRequest(bytes, on: central.linkID) {
        case .failure(let why):
            emit(.lockPairingRefused(central: "\(central.identifier)", reason: "\(why)",
                                     refusedTotal: pairing.counts.refused))
            return why
        case .success(let pending):
            // Its key waits for the owner's word: the link may stay that long, and the phone
            // opens a session once its key is enrolled; if it is not, it is timed as a stranger's.
            pairingLinks[central.linkID] = pending.key.id
            armUnauthenticatedTimer(for: central, within: PairingResponder.confirmationTimeout + configuration.unauthenticatedLinkTimeout)
            return nil
        }
    }
}
