import Foundation
import Testing
@testable import LatchkeyPhone

struct PresenceMachineTests {
    /// Drives a machine through inputs and returns every action, in order.
    func run(_ m: inout PresenceMachine, _ inputs: [PresenceMachine.Input]) -> [PresenceMachine.Action] {
        inputs.flatMap { m.handle($0) }
    }

    @Test func aLinkAtStartMeansHomeWithoutUnlock() {
        var m = PresenceMachine()
        let actions = m.handle(.linkUp)
        #expect(m.presence == .home)
        #expect(!actions.contains { if case .requestArrivalUnlock = $0 { true } else { false } })
    }

    @Test func departureNeedsTheGracePeriod() {
        var m = PresenceMachine()
        _ = run(&m, [.linkUp])
        #expect(m.handle(.linkDown) == [.persist, .startGraceTimer])
        #expect(m.presence == .leaving)
        #expect(m.handle(.graceExpired) == [.persist, .departed(cycle: 1)])
        #expect(m.presence == .away)
    }

    @Test func aFlapWithinGraceIsNotATrip() {
        var m = PresenceMachine()
        let actions = run(&m, [.linkUp, .linkDown, .linkUp])
        #expect(m.presence == .home)
        #expect(actions.contains(.cancelGraceTimer))
        #expect(m.cycle == 0)
        // And the link coming back again asks for nothing.
        #expect(run(&m, [.linkDown, .linkUp]).allSatisfy { if case .requestArrivalUnlock = $0 { false } else { true } })
    }

    @Test func returningAfterAwayAsksOnceForThatCycle() {
        var m = PresenceMachine()
        _ = run(&m, [.linkUp, .linkDown, .graceExpired])
        #expect(m.handle(.linkUp) == [.persist, .requestArrivalUnlock(cycle: 1)])
        #expect(m.handle(.arrivalAnswered(cycle: 1, granted: true)) == [.persist, .arrived(cycle: 1, unlocked: true)])
        // Link drops and returns inside grace: no second request.
        #expect(run(&m, [.linkDown, .linkUp]) == [.persist, .startGraceTimer, .cancelGraceTimer, .persist])
    }

    @Test func aRefusedArrivalStillSpendsTheCycle() {
        var m = PresenceMachine()
        _ = run(&m, [.linkUp, .linkDown, .graceExpired, .linkUp, .arrivalAnswered(cycle: 1, granted: false)])
        #expect(m.presence == .home)
        #expect(m.answeredCycle == 1)
    }

    @Test func anUndeliveredArrivalIsAskedAgainOnTheNextLink() {
        var m = PresenceMachine()
        _ = run(&m, [.linkUp, .linkDown, .graceExpired, .linkUp])
        #expect(m.handle(.linkDown) == [.persist])
        #expect(m.presence == .away)
        #expect(m.handle(.linkUp) == [.persist, .requestArrivalUnlock(cycle: 1)])
    }

    @Test func aLateAnswerForAnOldCycleIsIgnored() {
        var m = PresenceMachine()
        _ = run(&m, [.linkUp, .linkDown, .graceExpired, .linkUp])
        #expect(m.handle(.arrivalAnswered(cycle: 0, granted: true)) == [])
        #expect(m.presence == .arriving)
    }

    @Test func restoringWhileLeavingOrArrivingResumesAsAway() throws {
        var m = PresenceMachine()
        _ = run(&m, [.linkUp, .linkDown, .graceExpired, .linkUp])
        #expect(m.presence == .arriving)
        let restored = PresenceMachine(restoring: m)
        #expect(restored.presence == .away)
        var r = restored
        #expect(r.handle(.linkUp) == [.persist, .requestArrivalUnlock(cycle: 1)])
    }

    @Test func aStaleGraceTimerAfterReturnChangesNothing() {
        var m = PresenceMachine()
        _ = run(&m, [.linkUp, .linkDown, .linkUp])
        #expect(m.handle(.graceExpired) == [])
        #expect(m.presence == .home)
    }
}

/// An arrival request that met a moving bolt (the lock answered "busy", deciding nothing).
struct PresenceBusyArrivalTests {
    func arriving() -> PresenceMachine {
        var m = PresenceMachine()
        for input in [PresenceMachine.Input.linkUp, .linkDown, .graceExpired, .linkUp] { _ = m.handle(input) }
        return m
    }

    @Test func aBusyAnswerIsAskedAgainOnceAndDoesNotSpendTheCycle() {
        var m = arriving()
        #expect(m.handle(.arrivalBusy(cycle: 1)) == [.retryArrivalUnlockAfterMovement(cycle: 1)])
        #expect(m.presence == .arriving && m.answeredCycle == 0, "still this cycle's arrival")
        #expect(m.handle(.arrivalAnswered(cycle: 1, granted: true)) == [.persist, .arrived(cycle: 1, unlocked: true)])
        #expect(m.answeredCycle == 1)
    }

    @Test func aSecondBusyAnswerSpendsTheCycle() {
        var m = arriving()
        _ = m.handle(.arrivalBusy(cycle: 1))
        #expect(m.handle(.arrivalBusy(cycle: 1)) == [.persist, .arrived(cycle: 1, unlocked: false)])
        #expect(m.presence == .home && m.answeredCycle == 1)
        // Nothing more until the owner has been away again.
        #expect(m.handle(.arrivalBusy(cycle: 1)) == [])
        _ = m.handle(.linkDown)
        #expect(m.handle(.linkUp) == [.cancelGraceTimer, .persist])
    }

    @Test func theNextCycleMayRetryAgainAndAStaleBusyChangesNothing() {
        var m = arriving()
        _ = m.handle(.arrivalBusy(cycle: 1))
        _ = m.handle(.arrivalAnswered(cycle: 1, granted: true))
        for input in [PresenceMachine.Input.linkDown, .graceExpired, .linkUp] { _ = m.handle(input) }
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
