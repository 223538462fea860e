import Foundation
import Testing
@testable import LatchkeyPhone

/// Drives a machine through inputs and returns every action, in order.
func run(_ m: inout PresenceMachine, _ inputs: [PresenceMachine.Input]) -> [PresenceMachine.Action] {
    inputs.flatMap { m.handle($0) }
}

/// A machine whose owner has been away for one cycle, link down.
func away() -> PresenceMachine {
    var m = PresenceMachine()
    _ = run(&m, [.linkVerified, .linkDown, .graceExpired])
    return m
}

func asks(_ actions: [PresenceMachine.Action]) -> Bool {
    actions.contains { if case .requestArrivalUnlock = $0 { true } else { false } }
}

struct PresenceMachineTests {
    @Test func aLinkAtStartMeansHomeWithoutUnlock() {
        var m = PresenceMachine()
        let actions = m.handle(.linkVerified)
        #expect(m.presence == .home)
        #expect(!asks(actions))
    }

    @Test func departureNeedsTheGracePeriod() {
        var m = PresenceMachine()
        _ = run(&m, [.linkVerified])
        #expect(m.handle(.linkDown) == [.persist, .startGraceTimer])
        #expect(m.presence == .leaving)
        #expect(m.handle(.graceExpired) == [.persist, .departed(cycle: 1)])
        #expect(m.presence == .away)
    }

    @Test func aFlapWithinGraceIsNotATrip() {
        var m = PresenceMachine()
        let actions = run(&m, [.linkVerified, .linkDown, .linkVerified])
        #expect(m.presence == .home)
        #expect(actions.contains(.cancelGraceTimer))
        #expect(m.cycle == 0)
        #expect(!asks(run(&m, [.linkDown, .arrivalIntent, .linkVerified])), "an intent does not turn a flap into a trip")
    }

    @Test func aReLinkAloneNeverAsks() {
        var m = away()
        #expect(m.handle(.linkVerified) == [.persist, .startNearbyClock(cycle: 1)])
        #expect(m.presence == .nearby)
        // Any number of re-links without an intent: nothing.
        #expect(!asks(run(&m, [.linkDown, .linkVerified, .linkDown, .linkVerified])))
        #expect(m.spentCycle == 0)
    }

    @Test func anIntentBeforeTheLinkAsksOnceWhenItForms() {
        var m = away()
        #expect(m.handle(.arrivalIntent) == [.openIntentWindow])
        #expect(m.handle(.linkVerified) == [.persist, .closeIntentWindow, .requestArrivalUnlock(cycle: 1)])
        #expect(m.spentCycle == 1, "spent before the request leaves")
        #expect(m.handle(.arrivalAnswered(cycle: 1, granted: true)) == [.persist, .arrived(cycle: 1, unlocked: true)])
        // Link drops and returns inside grace: no second request.
        #expect(run(&m, [.linkDown, .linkVerified]) == [.persist, .startGraceTimer, .cancelGraceTimer, .persist])
    }

    @Test func anIntentWhileLinkedNearbyAsksAtOnce() {
        var m = away()
        _ = m.handle(.linkVerified)
        #expect(m.handle(.arrivalIntent) == [.persist, .closeIntentWindow, .requestArrivalUnlock(cycle: 1)])
    }

    @Test func anExpiredIntentAllowsNothing() {
        var m = away()
        _ = run(&m, [.arrivalIntent, .intentExpired])
        #expect(!m.intentOpen)
        #expect(m.handle(.linkVerified) == [.persist, .startNearbyClock(cycle: 1)])
        #expect(m.presence == .nearby)
    }

    @Test func oneIntentAllowsOneRequest() {
        var m = away()
        _ = run(&m, [.arrivalIntent, .linkVerified, .arrivalNotDelivered, .linkDown, .graceExpired])
        #expect(m.cycle == 2 && !m.intentOpen)
        #expect(!asks(m.handle(.linkVerified)), "a new cycle still needs a new intent")
        #expect(asks(m.handle(.arrivalIntent)))
    }

    @Test func anIntentWhileHomeIsIgnored() {
        var m = PresenceMachine()
        _ = m.handle(.linkVerified)
        #expect(m.handle(.arrivalIntent) == [])
        #expect(!m.intentOpen)
    }

    @Test func aRefusedArrivalStillSpendsTheCycle() {
        var m = away()
        _ = run(&m, [.arrivalIntent, .linkVerified, .arrivalAnswered(cycle: 1, granted: false)])
        #expect(m.presence == .home)
        #expect(m.spentCycle == 1)
    }

    @Test func anUndeliveredArrivalIsSpentAndNotAskedAgain() {
        var m = away()
        _ = run(&m, [.arrivalIntent, .linkVerified])
        #expect(m.handle(.arrivalNotDelivered) == [.persist, .arrived(cycle: 1, unlocked: false)])
        #expect(m.handle(.linkDown) == [.persist, .startGraceTimer])
        // Back before the grace ends, even with a new intent: nothing.
        #expect(!asks(run(&m, [.arrivalIntent, .linkVerified])))
        #expect(m.presence == .home)
    }

    @Test func aLinkLostBeforeTheAnswerSpendsTheCycleToo() {
        var m = away()
        _ = run(&m, [.arrivalIntent, .linkVerified])
        #expect(m.handle(.linkDown) == [.persist, .startGraceTimer])
        #expect(m.spentCycle == 1)
        #expect(!asks(run(&m, [.linkVerified, .arrivalIntent])))
    }

    @Test func aLateAnswerForAnOldCycleIsIgnored() {
        var m = away()
        _ = run(&m, [.arrivalIntent, .linkVerified])
        #expect(m.handle(.arrivalAnswered(cycle: 0, granted: true)) == [])
        #expect(m.presence == .arriving)
    }

    @Test func restoringWhileArrivingResumesAsAwayWithTheCycleSpent() throws {
        var m = away()
        _ = run(&m, [.arrivalIntent, .linkVerified])
        #expect(m.presence == .arriving)
        let saved = try JSONDecoder().decode(PresenceMachine.self, from: JSONEncoder().encode(m))
        var r = PresenceMachine(restoring: saved)
        #expect(r.presence == .away && r.spentCycle == 1)
        #expect(!asks(run(&r, [.arrivalIntent, .linkVerified])), "sent before the restart: spent")
    }

    @Test func restoringDropsAnOpenIntent() throws {
        var m = away()
        _ = m.handle(.arrivalIntent)
        var r = PresenceMachine(restoring: m)
        #expect(!r.intentOpen)
        #expect(!asks(r.handle(.linkVerified)))
    }

    @Test func aStateSavedByAnEarlierVersionKeepsItsAnsweredCycle() throws {
        let json = #"{"presence":"away","cycle":3,"answeredCycle":3}"#
        let m = try JSONDecoder().decode(PresenceMachine.self, from: Data(json.utf8))
        #expect(m.spentCycle == 3 && m.cycle == 3)
    }

    @Test func aStaleGraceTimerAfterReturnChangesNothing() {
        var m = PresenceMachine()
        _ = run(&m, [.linkVerified, .linkDown, .linkVerified])
        #expect(m.handle(.graceExpired) == [])
        #expect(m.presence == .home)
    }
}

/// A link is the lock's only once a sealed reply opened on it (`linkVerified`), and `nearby`
/// does not last (docs/SECURITY.md, "The network door").
struct PresenceProofAndAgeTests {
    @Test func anUnprovenLinkIsNoReturnAndNoHome() {
        var start = PresenceMachine()
        #expect(start.handle(.linkUp) == [] && start.presence == .unknown)
        var m = away()
        #expect(m.handle(.linkUp) == [] && m.presence == .away, "a lookalike's link is not the owner back")
        var leaving = PresenceMachine()
        _ = run(&leaving, [.linkVerified, .linkDown])
        #expect(leaving.handle(.linkUp) == [] && leaving.presence == .leaving, "nor does it cancel the grace")
    }

    @Test func anUnprovenLinkStillCarriesAnOpenIntentsRequest() {
        // Only the lock can act on the sealed request; asking at once keeps the arrival fast.
        var m = away()
        _ = m.handle(.arrivalIntent)
        #expect(asks(m.handle(.linkUp)))
        #expect(m.handle(.linkVerified) == [], "the proof that follows changes nothing")
    }

    @Test func nearbyAgesIntoHomeAndTheCycleIsOver() {
        var m = away()
        #expect(m.handle(.linkVerified) == [.persist, .startNearbyClock(cycle: 1)])
        #expect(m.handle(.nearbyExpired(cycle: 1)) == [.persist, .closeIntentWindow, .returnedWithoutAsking(cycle: 1)])
        #expect(m.presence == .home && m.spentCycle == 1)
        #expect(!asks(m.handle(.arrivalIntent)), "an intent hours later asks nothing")
    }

    @Test func theNearbyClockRunsAcrossFlapsAndAnAbsence() {
        var m = away()
        _ = m.handle(.linkVerified)
        #expect(run(&m, [.linkDown, .linkUp, .linkVerified]) == [.persist, .persist], "no second clock in a cycle")
        _ = m.handle(.linkDown)
        #expect(m.presence == .away)
        _ = m.handle(.nearbyExpired(cycle: 1))
        #expect(m.spentCycle == 1)
        #expect(!asks(run(&m, [.arrivalIntent, .linkUp, .linkVerified])))
        #expect(m.presence == .home)
    }

    @Test func aStaleNearbyClockOfAnEarlierCycleChangesNothing() {
        var m = away()
        _ = run(&m, [.linkVerified, .linkDown])
        // The owner left again (a new departure) before the clock of cycle 1 ran out.
        _ = run(&m, [.linkVerified, .arrivalIntent])
        _ = run(&m, [.arrivalAnswered(cycle: 1, granted: true), .linkDown, .graceExpired])
        #expect(m.cycle == 2)
        #expect(m.handle(.nearbyExpired(cycle: 1)) == [])
        #expect(m.spentCycle == 1)
    }

    @Test func aPhoneRestartedWhileNearbyCountsItsClockAsRunOut() throws {
        var m = away()
        _ = m.handle(.linkVerified)
        let saved = try JSONDecoder().decode(PresenceMachine.self, from: JSONEncoder().encode(m))
        var r = PresenceMachine(restoring: saved)
        #expect(r.presence == .away && r.spentCycle == 1)
        #expect(!asks(run(&r, [.linkUp, .linkVerified, .arrivalIntent])))
        #expect(r.presence == .home)
    }

    @Test func aPhoneRestartedWhileAwayBeforeAnyLinkStillAsks() throws {
        let saved = try JSONDecoder().decode(PresenceMachine.self, from: JSONEncoder().encode(away()))
        var r = PresenceMachine(restoring: saved)
        #expect(asks(run(&r, [.arrivalIntent, .linkUp])))
    }
}

/// An arrival request that met a moving bolt (the lock answered "busy", deciding nothing).
struct PresenceBusyArrivalTests {
    func arriving() -> PresenceMachine {
        var m = away()
        _ = run(&m, [.arrivalIntent, .linkVerified])
        return m
    }

    @Test func aBusyAnswerIsAskedAgainOnce() {
        var m = arriving()
        #expect(m.handle(.arrivalBusy(cycle: 1)) == [.retryArrivalUnlockAfterMovement(cycle: 1)])
        #expect(m.presence == .arriving, "still this cycle's arrival")
        #expect(m.handle(.arrivalAnswered(cycle: 1, granted: true)) == [.persist, .arrived(cycle: 1, unlocked: true)])
        #expect(m.spentCycle == 1)
    }

    @Test func aSecondBusyAnswerEndsTheArrival() {
        var m = arriving()
        _ = m.handle(.arrivalBusy(cycle: 1))
        #expect(m.handle(.arrivalBusy(cycle: 1)) == [.persist, .arrived(cycle: 1, unlocked: false)])
        #expect(m.presence == .home && m.spentCycle == 1)
        // Nothing more until the owner has been away again.
        #expect(m.handle(.arrivalBusy(cycle: 1)) == [])
        _ = m.handle(.linkDown)
        #expect(m.handle(.linkVerified) == [.cancelGraceTimer, .persist])
    }

    @Test func theNextCycleMayRetryAgainAndAStaleBusyChangesNothing() {
        var m = arriving()
        _ = m.handle(.arrivalBusy(cycle: 1))
        _ = m.handle(.arrivalAnswered(cycle: 1, granted: true))
        _ = run(&m, [.linkDown, .graceExpired, .arrivalIntent, .linkVerified])
        #expect(m.handle(.arrivalBusy(cycle: 1)) == [], "an answer about an earlier cycle")
        #expect(m.handle(.arrivalBusy(cycle: 2)) == [.retryArrivalUnlockAfterMovement(cycle: 2)])
    }

    @Test func theRetryIsNotPersistedAPhoneRestartedMeanwhileResumesAsAway() throws {
        var m = arriving()
        _ = m.handle(.arrivalBusy(cycle: 1))
        let saved = try JSONDecoder().decode(PresenceMachine.self, from: JSONEncoder().encode(m))
        let restored = PresenceMachine(restoring: saved)
        #expect(restored.presence == .away && !restored.arrivalRetried && restored.cycle == 1)
    }
}
