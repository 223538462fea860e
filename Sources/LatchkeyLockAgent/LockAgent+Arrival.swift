import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeyTransport

// The lock's side of an arrival unlock (docs/SECURITY.md, "Arrival unlock"): an authenticated
// request is still refused unless the lock saw its phone depart since the last one, unless its
// timing fits bounds a relay cannot stretch, and unless the situation calls for it
// (`ArrivalPolicy`); an accepted one relocks if the door is not opened in time.
extension LockAgent {
    /// Nil: the arrival may go on to the controller. Any verified arrival request spends the
    /// departure it answers, whatever follows: a refused one is not asked again on that
    /// departure, by a phone or by whoever carries its frames.
    func arrivalRefusal(key: UInt32, on central: Central, received: Instant) -> ArrivalPolicy.Refusal? {
        let policy = configuration.arrivalPolicy
        let credit = departuresSeen.removeValue(forKey: key)
        // The challenge was read on this link (the verifier checked it), so its time is known.
        let elapsed = challengeReadAt.removeValue(forKey: central.linkID).map { received - $0 } ?? .zero
        let interval = central.connectionInterval
        // The figures of every arrival, accepted or not: what the bounds are chosen from.
        emit(.lockArrivalTiming(key: key, challengeToCommandMs: elapsed,
                                intervalMs: interval))
        if let reason = policy.relaySuspicion(elapsed: elapsed, interval: interval) {
            emit(.lockSuspectedRelay(key: key, reason: "\(reason)"))
            lockEvent(securityEvent(.suspectedRelay(SuspectedRelayRecord(reason, who: KeyID(key), elapsed: elapsed,
                                                                         interval: interval))))
            return .suspectedRelay
        }
        guard let credit else { return .noDepartureSeen }
        if let back = credit, received - back > policy.departureCreditAfterReturn { return .returnedLongAgo }
        return policy.check(now: received, doorState: controller.doorState, mode: controller.operatingMode,
                            lastManualUnlock: lastManualUnlock, lastArrival: lastArrival, key: key)
    }

    /// The departure credit (docs/SECURITY.md, "Arrival unlock") cannot outlive its owner's
    /// return: a command of the key that moves the bolt spends it (the owner is home and
    /// opened or locked the door themselves), and the key's first authenticated command since
    /// the departure — the `present` of a re-formed link — starts the clock that ends it.
    func spendOrTimeDepartureCredit(key: UInt32, operation: LockOperation, at time: Instant) {
        guard let clock = departuresSeen[key] else { return }
        switch operation {
        case .lock, .unlock, .unlockWithTimeout:
            departuresSeen[key] = nil
            emit(.lockDepartureCreditSpent(key: key, op: .init(operation)))
        case .present, .setOperatingMode, .arrivalUnlock:
            guard clock == nil else { return }
            departuresSeen[key] = .some(time)
            emit(.lockDepartureCreditClock(key: key, op: .init(operation),
                                           seconds: configuration.arrivalPolicy.departureCreditAfterReturn))
        }
    }

    /// An arrival with no credit to spend is in the audit log: one publish on a house's
    /// network that makes the owner's phone ask is an attempt the owner should see.
    func auditUnexpectedArrival(_ refusal: ArrivalPolicy.Refusal, key: UInt32) {
        guard refusal == .noDepartureSeen || refusal == .returnedLongAgo else { return }
        let record = LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(key))
        lockEvent(securityEvent(.lockOperationError(record, .arrivalNotExpected)))
    }

    /// The arrival was decided: remember it (the next phone's within `betweenArrivals` is
    /// refused) and relock unless the door opens in time.
    func arrivalAccepted(key: UInt32, at time: Instant) {
        lastArrival = (key, time)
        arrivalRelockTimer?.cancel()
        guard let wait = configuration.arrivalPolicy.relockUnlessOpenedWithin else { return }
        arrivalRelockTimer = loop.schedule(after: wait) { [weak self] in
            guard let self else { return }
            arrivalRelockTimer = nil
            guard controller.lockState != .locked, !controller.doorState.isOpen else { return }
            emit(.lockArrivalRelock(key: key, seconds: wait))
            controller.lockAutomatically(for: KeyID(key))
        }
    }

    /// The door opened (whoever arrived came in), or the bolt was locked by other means: the
    /// arrival's relock is not needed, and must not lock later over a newer decision.
    func doorMovedAfterArrival(_ event: LockEvent) {
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
