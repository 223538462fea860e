import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeyTransport

/// Refusals in the audit log (docs/LOCK-RULES.md rule 5): each counted failure is a
/// LockOperationError naming the key and the way it came in, and each lockout it engaged a
/// DoorLockAlarm(wrongCodeEntryLimit). A refusal during a lockout is not logged: the lockout
/// already was, and an attacker should not be able to flush the log's retention with refused
/// frames. Refusals that count for no key are paced (`RefusalAuditPacer`). Whether a request
/// is refused is not decided here (`LockAuthority`): this files what was decided.
final class AuditTrail {
    private let loop: any EventLoop
    private let emit: (Event) -> Void
    /// Files a security event (one that moves nothing) in the audit log.
    private let logSecurity: (LockEvent.Kind) -> Void
    /// Paces audit entries that count for no key.
    private var pacer = RefusalAuditPacer()

    init(loop: any EventLoop, emit: @escaping (Event) -> Void, logSecurity: @escaping (LockEvent.Kind) -> Void) {
        self.loop = loop
        self.emit = emit
        self.logSecurity = logSecurity
    }

    /// A phone's refused frame.
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

    /// A wrong unlock code the bridge checked, counted against its key `keyID`: an unlock
    /// refused for an invalid credential, and the lockout it engaged, if any.
    func wrongCode(keyID: UInt32, engaged: LockoutEngagement?) {
        emit(.lockBridgeWrongCode(key: keyID))
        let record = LockOperationRecord(operation: .unlock, source: .proprietaryRemote, who: KeyID(keyID))
        logSecurity(.lockOperationError(record, .invalidCredential))
        if let engaged {
            emit(.lockLockout(principal: "\(engaged.principal)", level: engaged.level,
                              seconds: engaged.duration, key: keyID))
            logSecurity(.doorLockAlarm(.wrongCodeEntryLimit))
        }
    }

    /// Whether a refusal of `source` goes into the audit log now (`RefusalAuditPacer`); what
    /// is left out is said as a `lock.audit_paced` event, with the count since the last entry.
    private func pace(_ source: RefusalAuditPacer.Source) -> Bool {
        let (admitted, leftOut) = pacer.admit(source, at: loop.now)
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
        logSecurity(.lockOperationError(record, error))
        for e in engaged {
            // A key's own lockout names the key: journald's KEY_ID= (`AgentEvent.journaldEntry`).
            var key: UInt32?
            if case .key(let id) = e.principal { key = id }
            emit(.lockLockout(principal: "\(e.principal)", level: e.level, seconds: e.duration,
                              key: key))
            logSecurity(.doorLockAlarm(.wrongCodeEntryLimit))
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
}

/// Keeps refusals that nobody's key counts for (a revoked key re-linking, strangers' links)
/// from filling the audit log: at most one entry per source per `spacing`; the rest are
/// counted and said as an agent event (journald), never silently dropped.
struct RefusalAuditPacer {
    /// Ten minutes: at most 144 entries a day per revoked key, and as many for all strangers
    /// together, in a log that keeps 10,000 events.
    static let spacing: Duration = .seconds(600)

    enum Source: Hashable { case revokedKey(UInt32), strangers }

    private var last: [Source: Instant] = [:]
    private var suppressed: [Source: Int] = [:]

    /// Whether this refusal goes into the audit log now; when it does, how many of the same
    /// source were left out since the last entry.
    mutating func admit(_ source: Source, at now: Instant) -> (admitted: Bool, leftOut: Int) {
        if let previous = last[source], now - previous < Self.spacing {
            suppressed[source, default: 0] += 1
            return (false, suppressed[source]!)
        }
        last[source] = now
        return (true, suppressed.removeValue(forKey: source) ?? 0)
    }
}
