import LatchkeySim
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `LinkedAdvertising` on its own, on a manual clock.
@Suite struct LinkedAdvertisingTests {
    let loop = ManualEventLoop()
    let advertising: LinkedAdvertising
    final class Count { var value = 0 }
    let due = Count()

    init() {
        advertising = LinkedAdvertising(loop: loop)
        advertising.delay = .seconds(2)
        advertising.onDue = { [due] in due.value += 1 }
    }

    @Test func aCentralLeavingReAddsTheInstanceAfterTheDelay() {
        #expect(advertising.schedule())
        loop.advance(by: .milliseconds(1_999))
        #expect(due.value == 0 && advertising.isScheduled)
        loop.advance(by: .milliseconds(1))
        #expect(due.value == 1)
        #expect(!advertising.isScheduled)
    }

    @Test func aSecondCentralLeavingDoesNotPushTheReAddBack() {
        advertising.schedule()
        loop.advance(by: .seconds(1))
        #expect(!advertising.schedule(), "the scheduled re-add stands")
        loop.advance(by: .seconds(1))
        #expect(due.value == 1)
        loop.advance(by: .seconds(5))
        #expect(due.value == 1, "one re-add, not one per central")
    }

    @Test func aChangeOfPowerStateCancelsIt() {
        advertising.schedule()
        advertising.cancel()
        loop.advance(by: .seconds(60))
        #expect(due.value == 0 && !advertising.isScheduled)
        #expect(advertising.schedule(), "a later central leaving schedules again")
    }

    @Test func aRefusalBesideALinkIsReportedOnceAndNotTriedAgain() {
        #expect(advertising.advertisesWhileLinked == nil && advertising.triesWhileLinked)
        #expect(advertising.noteAnswer(took: false), "the first refusal is reported")
        #expect(advertising.advertisesWhileLinked == false && !advertising.triesWhileLinked)
        #expect(!advertising.noteAnswer(took: false), "a late second refusal is not reported again")
    }

    @Test func anAcceptedInstanceBesideALinkIsRemembered() {
        #expect(!advertising.noteAnswer(took: true))
        #expect(advertising.advertisesWhileLinked == true && advertising.triesWhileLinked)
    }
}
