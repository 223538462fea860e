import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeySim
import LatchkeyTransport
import Testing

/// The lock as the arrival rules see it, with the locks it was asked for.
private final class FakeLock: ArrivalLockSide {
    var lockState: LockState = .unlocked
    var doorState: DoorState = .closed
    var operatingMode: OperatingMode = .normal
    var automaticLocks: [KeyID?] = []
    func lockAutomatically(for key: KeyID?) -> CommandOutcome {
        automaticLocks.append(key)
        lockState = .locked
        return .decided(DecidedCommand(moving: false))
    }
}

/// `ArrivalTracker` on its own: departures, the credit they earn, the relay bound and the relock.
@Suite struct ArrivalTrackerTests {
    let loop = ManualEventLoop()
    private let lock = FakeLock()
    let link = LinkID(7)
    let interval: Duration = .milliseconds(30)
    private let events: EventRecorder
    private let audited: AuditRecorder
    let tracker: ArrivalTracker

    init() {
        let events = EventRecorder(), audited = AuditRecorder()
        self.events = events
        self.audited = audited
        tracker = ArrivalTracker(loop: loop, policy: ArrivalPolicy(), departureGrace: .seconds(5), lock: lock,
                                 emit: { events.names.append($0.name) }, logSecurity: { audited.kinds.append($0) })
    }

    /// A phone bound to key 1 leaves: its link ends and the grace runs out.
    func depart(key: UInt32 = 1) {
        tracker.linkEnded(link, boundTo: key)
        loop.advance(by: .seconds(5))
    }

    func arrive(key: UInt32 = 1, after elapsed: Duration = .milliseconds(40)) -> Result<DepartureCredit, ArrivalRefusal> {
        tracker.challengeRead(on: link)
        loop.advance(by: elapsed)
        tracker.commandVerified(key: key, operation: .arrivalUnlock, at: loop.now)
        return tracker.checkArrival(key: key, on: link, interval: interval, received: loop.now)
    }

    @Test func aDepartureLocksBehindItsOwnerAndEarnsOneArrival() throws {
        depart()
        #expect(lock.automaticLocks == [KeyID(1)])
        #expect(events.names.contains(EventKind.lockDeparture.name))
        lock.lockState = .unlocked
        #expect((try? arrive().get()) != nil)
        // The credit is spent: the same request once more has no departure to answer.
        #expect(arrive() == .failure(ArrivalRefusal(.noDepartureSeen)))
        #expect(audited.kinds.count == 0)
        tracker.auditUnexpected(ArrivalRefusal(.noDepartureSeen), key: 1)
        #expect(audited.kinds.count == 1)
    }

    @Test func aPhoneBackWithinTheGraceDidNotDepart() {
        tracker.linkEnded(link, boundTo: 1)
        loop.advance(by: .seconds(4))
        tracker.phoneIsHere(key: 1)
        loop.advance(by: .seconds(10))
        #expect(lock.automaticLocks.isEmpty)
        #expect(events.names == [EventKind.lockDepartureCancelled.name])
        #expect(arrive() == .failure(ArrivalRefusal(.noDepartureSeen)))
    }

    @Test func aSlowChallengeIsASuspectedRelayAndSpendsTheCredit() {
        depart()
        #expect(arrive(after: .milliseconds(400)) == .failure(ArrivalRefusal(.suspectedRelay)))
        #expect(events.names.contains(EventKind.lockSuspectedRelay.name))
        #expect(audited.kinds.count == 1)
        #expect(arrive() == .failure(ArrivalRefusal(.noDepartureSeen)))
    }

    @Test func theCreditEndsLongAfterTheReturn() {
        depart()
        tracker.commandVerified(key: 1, operation: .present, at: loop.now)  // the clock starts
        loop.advance(by: .seconds(121))
        #expect(arrive() == .failure(ArrivalRefusal(.returnedLongAgo)))
    }

    @Test func aBoltCommandSpendsTheCredit() {
        depart()
        tracker.commandVerified(key: 1, operation: .unlock, at: loop.now)
        #expect(events.names.contains(EventKind.lockDepartureCreditSpent.name))
        #expect(arrive() == .failure(ArrivalRefusal(.noDepartureSeen)))
    }

    @Test func aCreditGivenBackAnswersOneMoreRequest() throws {
        depart()
        let credit = try arrive().get()
        tracker.giveBack(credit)
        #expect((try? arrive().get()) != nil)
    }

    @Test func aRevokedKeyLosesItsCredit() {
        depart()
        tracker.keyEnded(1)
        #expect(arrive() == .failure(ArrivalRefusal(.noDepartureSeen)))
    }

    @Test func anUnlockFromInsideHoldsArrivalsOff() {
        depart()
        let inside = LockOperationRecord(operation: .unlock, source: .manual)
        tracker.lockEvent(LockEvent(kind: .lockOperation(inside), time: loop.now, lockStateBefore: .locked,
                                    lockStateAfter: .unlocked, doorState: .closed))
        #expect(arrive() == .failure(ArrivalRefusal(.recentManualUnlock)))
    }

    @Test func anAcceptedArrivalRelocksUnlessTheDoorOpens() throws {
        depart()
        lock.lockState = .unlocked
        tracker.arrivalAccepted(key: 1, at: loop.now)
        loop.advance(by: .seconds(30))
        #expect(lock.automaticLocks == [KeyID(1), KeyID(1)])
        #expect(events.names.contains(EventKind.lockArrivalRelock.name))

        lock.lockState = .unlocked
        tracker.arrivalAccepted(key: 1, at: loop.now)
        tracker.lockEvent(LockEvent(kind: .doorStateChange(.open), time: loop.now, lockStateBefore: .unlocked,
                                    lockStateAfter: .unlocked, doorState: .open))
        loop.advance(by: .seconds(60))
        #expect(lock.automaticLocks.count == 2)
    }

    @Test func anotherPhoneArrivingMomentsLaterIsRefused() {
        depart(key: 1)
        depart(key: 2)
        lock.lockState = .unlocked
        tracker.arrivalAccepted(key: 1, at: loop.now)
        #expect(arrive(key: 2) == .failure(ArrivalRefusal(.recentOtherArrival)))
    }
}

private final class EventRecorder { var names: [String] = [] }
private final class AuditRecorder { var kinds: [LockEvent.Kind] = [] }
