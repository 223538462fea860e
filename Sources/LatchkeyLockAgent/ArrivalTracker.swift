import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyTransport

/// What the arrival and departure rules need of the lock: where it stands, and locking by
/// itself. `LockController` is it; a test passes its own.
protocol ArrivalLockSide: AnyObject {
    var lockState: LockState { get }
    var doorState: DoorState { get }
    var operatingMode: OperatingMode { get }
    @discardableResult func lockAutomatically(for key: KeyID?) -> CommandOutcome
}

extension LockController: ArrivalLockSide {}

/// A departure the lock saw, held by an arrival request that passed the rules: given back if
/// the bolt was busy (the phone asks once more on the same departure), spent otherwise.
struct DepartureCredit: Equatable {
    let key: UInt32
    /// When the key's first authenticated command since the departure came; nil before it.
    let since: Instant?
}

/// The lock's side of departures and arrival unlocks (docs/SECURITY.md, "Arrival unlock"):
/// a bound phone gone for the grace locks the door behind its owner and earns its key one
/// arrival; an arrival request is refused unless that departure was seen, unless its timing
/// fits bounds a relay cannot stretch, and unless the situation calls for it
/// (`ArrivalPolicy`); an accepted one relocks if the door is not opened in time.
final class ArrivalTracker {
    private let loop: any EventLoop
    private let policy: ArrivalPolicy
    private let departureGrace: Duration
    private unowned let lock: any ArrivalLockSide
    private let emit: (Event) -> Void
    /// Files a security event (one that moves nothing) in the audit log.
    private let logSecurity: (LockEvent.Kind) -> Void

    private var departureTimers: [UInt32: Scheduled] = [:]
    /// Keys whose phone this lock saw depart (link gone for the grace) since their last
    /// arrival request or bolt command: only they may ask for one, and only until
    /// `departureCreditAfterReturn` after the key's first authenticated command since (the
    /// value; nil until that command). Not persisted: after a restart an arrival waits for a
    /// departure seen afresh (the cautious reading).
    private var departuresSeen: [UInt32: Instant?] = [:]
    /// When the challenge now live on each link was read: the arrival's relay bound.
    private var challengeReadAt: [LinkID: Instant] = [:]
    /// Relocks after an arrival unlock unless the door opens first.
    private var arrivalRelockTimer: Scheduled?
    private var lastManualUnlock: Instant?
    private var lastArrival: (key: UInt32, at: Instant)?

    init(loop: any EventLoop, policy: ArrivalPolicy, departureGrace: Duration, lock: any ArrivalLockSide,
         emit: @escaping (Event) -> Void, logSecurity: @escaping (LockEvent.Kind) -> Void) {
        self.loop = loop
        self.policy = policy
        self.departureGrace = departureGrace
        self.lock = lock
        self.emit = emit
        self.logSecurity = logSecurity
    }

    // MARK: Links and departures

    /// A challenge was read on `link` now: an arrival on it is timed from here.
    func challengeRead(on link: LinkID) {
        challengeReadAt[link] = loop.now
    }

    /// `link` is gone; when a phone's key was bound to it, the departure grace starts.
    func linkEnded(_ link: LinkID, boundTo key: UInt32?) {
        challengeReadAt[link] = nil
        guard let key else { return }
        departureTimers[key]?.cancel()
        departureTimers[key] = loop.schedule(after: departureGrace) { [weak self] in
            self?.departed(key)
        }
    }

    /// The phone holding `key` proved it is here (on a new link): it did not depart.
    func phoneIsHere(key: UInt32) {
        if let t = departureTimers.removeValue(forKey: key) {
            t.cancel()
            emit(.lockDepartureCancelled(key: key))
        }
    }

    /// A revoked key earns no arrival.
    func keyEnded(_ key: UInt32) {
        departuresSeen[key] = nil
    }

    /// The phone holding `key` has been gone for the grace period: lock behind its owner.
    private func departed(_ key: UInt32) {
        departureTimers[key] = nil
        departuresSeen[key] = .some(nil)
        emit(.lockDeparture(key: key))
        guard lock.lockState != .locked else { return }
        lock.lockAutomatically(for: KeyID(key))
    }

    // MARK: Commands

    /// The departure credit cannot outlive its owner's return: a command of the key that
    /// moves the bolt spends it (the owner is home and opened or locked the door themselves),
    /// and the key's first authenticated command since the departure — the `present` of a
    /// re-formed link — starts the clock that ends it.
    func commandVerified(key: UInt32, operation: LockOperation, at time: Instant) {
        guard let clock = departuresSeen[key] else { return }
        switch operation {
        case .lock, .unlock, .unlockWithTimeout:
            departuresSeen[key] = nil
            emit(.lockDepartureCreditSpent(key: key, op: .init(operation)))
        case .present, .setOperatingMode, .arrivalUnlock:
            guard clock == nil else { return }
            departuresSeen[key] = .some(time)
            emit(.lockDepartureCreditClock(key: key, op: .init(operation),
                                           seconds: policy.departureCreditAfterReturn))
        }
    }

    /// The rules an arrival request meets before it may go to the lock: its credit when it
    /// passes, or why not. Any verified arrival request spends the departure it answers,
    /// whatever follows: a refused one is not asked again on that departure, by a phone or by
    /// whoever carries its frames.
    func checkArrival(key: UInt32, on link: LinkID, interval: Duration?,
                      received: Instant) -> Result<DepartureCredit, ArrivalRefusal> {
        let credit = departuresSeen.removeValue(forKey: key)
        // The challenge was read on this link (the verifier checked it), so its time is known.
        let elapsed = challengeReadAt.removeValue(forKey: link).map { received - $0 } ?? .zero
        // The figures of every arrival, accepted or not: what the bounds are chosen from.
        emit(.lockArrivalTiming(key: key, challengeToCommandMs: elapsed,
                                intervalMs: interval))
        if let reason = policy.relaySuspicion(elapsed: elapsed, interval: interval) {
            emit(.lockSuspectedRelay(key: key, reason: "\(reason)"))
            logSecurity(.suspectedRelay(SuspectedRelayRecord(reason, who: KeyID(key), elapsed: elapsed,
                                                             interval: interval)))
            return .failure(ArrivalRefusal(.suspectedRelay))
        }
        guard let credit else { return .failure(ArrivalRefusal(.noDepartureSeen)) }
        if let back = credit, received - back > policy.departureCreditAfterReturn {
            return .failure(ArrivalRefusal(.returnedLongAgo))
        }
        if let refusal = policy.check(now: received, doorState: lock.doorState, mode: lock.operatingMode,
                                      lastManualUnlock: lastManualUnlock, lastArrival: lastArrival, key: key) {
            return .failure(ArrivalRefusal(refusal))
        }
        return .success(DepartureCredit(key: key, since: credit))
    }

    /// An arrival with no credit to spend is in the audit log: one publish on a house's
    /// network that makes the owner's phone ask is an attempt the owner should see.
    func auditUnexpected(_ refusal: ArrivalRefusal, key: UInt32) {
        guard refusal.reason == .noDepartureSeen || refusal.reason == .returnedLongAgo else { return }
        let record = LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(key))
        logSecurity(.lockOperationError(record, .arrivalNotExpected))
    }

    /// The bolt was moving and decided nothing: the arrival may ask once more on its departure.
    func giveBack(_ credit: DepartureCredit) {
        departuresSeen[credit.key] = .some(credit.since)
    }

    /// The arrival was decided: remember it (the next phone's within `betweenArrivals` is
    /// refused) and relock unless the door opens in time.
    func arrivalAccepted(key: UInt32, at time: Instant) {
        lastArrival = (key, time)
        arrivalRelockTimer?.cancel()
        guard let wait = policy.relockUnlessOpenedWithin else { return }
        arrivalRelockTimer = loop.schedule(after: wait) { [weak self] in
            guard let self else { return }
            arrivalRelockTimer = nil
            guard lock.lockState != .locked, !lock.doorState.isOpen else { return }
            emit(.lockArrivalRelock(key: key, seconds: wait))
            lock.lockAutomatically(for: KeyID(key))
        }
    }

    // MARK: Lock events

    /// Each lock event as it happens. The door opened (whoever arrived came in), or the bolt
    /// was locked by other means: the arrival's relock is not needed, and must not lock later
    /// over a newer decision. An unlock from inside holds arrivals off for a while.
    func lockEvent(_ event: LockEvent) {
        if case .lockOperation(let r) = event.kind, r.operation == .unlock, r.source == .manual || r.source == .button {
            lastManualUnlock = event.time
        }
        guard arrivalRelockTimer != nil else { return }
        switch event.kind {
        case .doorStateChange(let state) where state.isOpen: break
        case .lockOperation(let r) where r.operation == .lock: break
        default: return
        }
        arrivalRelockTimer?.cancel()
        arrivalRelockTimer = nil
    }
}

/// Why an arrival request was refused before it reached the lock.
struct ArrivalRefusal: Error, Equatable {
    let reason: ArrivalPolicy.Refusal
    init(_ reason: ArrivalPolicy.Refusal) { self.reason = reason }
}
