import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeyTransport

/// A phone's control write, from its bytes to the answer: the verifier and `LockAuthority`
/// (the one gate) say whether the key may, `ArrivalTracker` whether an arrival may go on,
/// `LockCommandPipeline` what the lock decided; this puts them in order, says each step
/// (`lock.command_*`) and turns the outcome into the phone's answer. Nil means accepted
/// (decided and journalled; the actuator is moving or already at the target).
final class PhoneCommands<Link: LinkHandle> {
    private let loop: any EventLoop
    private let verifier: CommandVerifier
    private let links: LinkRegistry<Link>
    private let audit: AuditTrail
    private let arrivals: ArrivalTracker
    private let pipeline: LockCommandPipeline
    private let emit: (Event) -> Void
    /// The coordinator's part: what a frame opened on its link (a phone subscribed already
    /// hears the state), the link bound to its key, an admin's mode change, the bolt moving.
    private let opened: (LinkSession?, Link) -> Void
    private let bind: (Link, UInt32) -> Void
    private let setOperatingMode: (UInt8?, Authorization) -> CommandRejection?
    private let moving: () -> Void

    init(loop: any EventLoop, verifier: CommandVerifier, links: LinkRegistry<Link>, audit: AuditTrail,
         arrivals: ArrivalTracker, pipeline: LockCommandPipeline, emit: @escaping (Event) -> Void,
         opened: @escaping (LinkSession?, Link) -> Void, bind: @escaping (Link, UInt32) -> Void,
         setOperatingMode: @escaping (UInt8?, Authorization) -> CommandRejection?, moving: @escaping () -> Void) {
        self.loop = loop
        self.verifier = verifier
        self.links = links
        self.audit = audit
        self.arrivals = arrivals
        self.pipeline = pipeline
        self.emit = emit
        self.opened = opened
        self.bind = bind
        self.setOperatingMode = setOperatingMode
        self.moving = moving
    }

    /// Verifies, filters and submits one control write.
    func handle(_ bytes: [UInt8], from central: Link) -> CommandRejection? {
        let received = loop.now
        let result = verifier.verify(bytes, on: central.linkID)
        opened(result.session, central)
        switch result {
        case .failure(let failure):
            emit(.lockCommandRejected(central: "\(central.identifier)", reason: .init(failure.rejection)))
            let dropNow = failure.dropLink && !links.isDropping(central.linkID)
            if failure.counted || failure.revoked || dropNow { audit.audit(failure) }
            if dropNow { links.drop(central, because: "\(verifier.unauthenticatedFrameLimit) unauthenticated frames") }
            return failure.rejection
        case .success(let verified):
            let answer = carryOut(verified, from: central, received: received)
            // Whatever path it took, the counter is durable before the phone hears back.
            return pipeline.commitCounter(key: verified.key.id) ?? answer
        }
    }

    private func carryOut(_ verified: VerifiedCommand, from central: Link, received: Instant) -> CommandRejection? {
        let key = verified.key.id
        let op = verified.body.operation
        arrivals.commandVerified(key: key, operation: op, at: received)
        var credit: DepartureCredit?  // an arrival's, given back for a busy bolt below
        if op == .arrivalUnlock {
            switch arrivals.checkArrival(key: key, on: central.linkID, interval: central.connectionInterval,
                                         received: received) {
            case .failure(let refusal):
                emit(.lockArrivalRefused(key: key, reason: .init(refusal.reason)))
                arrivals.auditUnexpected(refusal, key: key)
                return .refusedByPolicy
            case .success(let held):
                credit = held
            }
        }
        let relockAfter = Duration.seconds(Int(verified.body.timeoutSeconds ?? 1))
        switch op {
        case .lock, .unlock, .arrivalUnlock, .unlockWithTimeout: break
        case .present:
            // Authenticates the link for the departure rule; never moves the lock.
            if let failed = pipeline.commitCounter(key: key) { return failed }
            bind(central, key)
            emit(.lockPhonePresent(key: key, central: "\(central.identifier)"))
            return nil
        case .setOperatingMode:
            if let failed = pipeline.commitCounter(key: key) { return failed }
            return setOperatingMode(verified.body.operatingMode, verified.authorization)
        }
        // The counter-with-decision rule: the store commits the key's counter with the decision (one fsync).
        let accepted: AcceptedDecision
        switch pipeline.submit(verified.authorization, counter: KeyCounter(keyID: key, counter: verified.counter),
                               received: received, relockAfter: relockAfter) {
        case .refused(let error):
            emit(.lockCommandRefused(key: key, op: .init(op), error: "\(error)"))
            // A moving bolt decided nothing: the phone asks once more after it, on the same departure.
            if error == .busy, let credit { arrivals.giveBack(credit) }
            return rejection(for: error)
        case .counterNotStored:
            return .storageFailure
        case .accepted(let decided):
            accepted = decided
        }
        // Accepted. The movement's outcome arrives later as an event (`lockEvent`): wake work until then.
        if accepted.moving { moving() }
        bind(central, key)  // who is here, for the departure rule
        if op == .arrivalUnlock { arrivals.arrivalAccepted(key: key, at: received) }
        let actuatorMs: Duration? = accepted.actuatorLatency
        var decision: DecisionNumber?, durableMs: Duration?
        if let decided = accepted.decision {
            decision = .number(decided.rawValue)  // durable before this line
            // The part of actuator_ms the disk took to make the decision durable.
            durableMs = accepted.durable
        }
        emit(.lockCommandAccepted(key: key, op: .init(op), counter: verified.counter, actuatorMs: actuatorMs,
                                  decision: decision, durableMs: durableMs))
        return nil
    }

    private func rejection(for error: OperationError) -> CommandRejection {
        switch error {
        case .jammed, .hardwareFault: .actuatorDisabled
        case .journalFailed: .storageFailure
        case .invalidCredential, .disabledUserDenied: .notAuthorized
        case .busy: .busy  // the phone may ask again once the bolt stops (an arrival does, once)
        case .unspecified, .restricted, .insufficientBattery, .doorOpen, .notReady, .interrupted, .pairingNotConfirmed,
             .arrivalNotExpected:
            .refusedByPolicy
        }
    }
}
