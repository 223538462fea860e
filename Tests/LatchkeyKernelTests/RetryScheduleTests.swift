import LatchkeySim
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `RetrySchedule` on its own, on a manual clock: refusals in, attempts due and waiters
/// released out.
@Suite struct RetryScheduleTests {
    let loop = ManualEventLoop()
    let schedule: RetrySchedule
    final class Due { var requests: [TransportRefusal.Request] = [] }
    let due = Due()

    init() {
        schedule = RetrySchedule(loop: loop)
        schedule.backoff = .init(first: .milliseconds(100), cap: .milliseconds(300))
        schedule.onDue = { [due] in due.requests.append($0) }
    }

    func expectRefusal(_ request: TransportRefusal.Request, attempt: Int, retryIn: Duration,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        let refusal = schedule.refused(request)
        #expect(refusal.attempt == attempt, sourceLocation: sourceLocation)
        #expect(refusal.retryIn == retryIn, sourceLocation: sourceLocation)
    }

    @Test func refusalsInARowBackOffToTheCapAndEachAttemptComesDue() {
        expectRefusal(.advertising, attempt: 1, retryIn: .milliseconds(100))
        loop.advance(by: .milliseconds(99))
        #expect(due.requests.isEmpty)
        loop.advance(by: .milliseconds(1))
        #expect(due.requests == [.advertising])
        #expect(schedule.isRetrying(.advertising), "waits for the attempt's answer")
        expectRefusal(.advertising, attempt: 2, retryIn: .milliseconds(200))
        expectRefusal(.advertising, attempt: 3, retryIn: .milliseconds(300))
        expectRefusal(.advertising, attempt: 4, retryIn: .milliseconds(300))
        loop.advance(by: .seconds(1))
        #expect(due.requests == [.advertising, .advertising], "a refusal replaces the timer it found")
    }

    @Test func takingEndsTheRefusalsAndItsTimer() {
        _ = schedule.refused(.scanning)
        #expect(schedule.took(.scanning).isEmpty)
        #expect(!schedule.isRetrying(.scanning) && schedule.isEmpty)
        loop.advance(by: .seconds(1))
        #expect(due.requests.isEmpty)
        #expect(schedule.refused(.scanning).attempt == 1, "counted anew")
    }

    @Test func anAttemptOfTheApplicationsOwnReplacesTheTimerButKeepsTheEntry() {
        _ = schedule.refused(.power)
        schedule.attemptNow(.power)
        loop.advance(by: .seconds(1))
        #expect(due.requests.isEmpty)
        #expect(schedule.isRetrying(.power))
    }

    @Test func waitersAreReleasedWhenTheLastRefusedRequestTakes() {
        var ran = 0
        #expect(!schedule.wait { ran += 1 }, "nothing refused: run it now")
        _ = schedule.refused(.power)
        _ = schedule.refused(.scanning)
        #expect(schedule.wait { ran += 1 })
        #expect(schedule.took(.power).isEmpty, "scanning still waits")
        let released = schedule.took(.scanning)
        #expect(released.count == 1)
        released.forEach { $0() }
        #expect(ran == 1)
        #expect(schedule.took(.scanning).isEmpty, "released once")
    }

    @Test func forgettingAllCancelsEveryTimerAndReleasesTheWaiters() {
        _ = schedule.refused(.power)
        _ = schedule.refused(.pendingConnection(BluetoothAddress(0xC0FFEE000002)))
        _ = schedule.wait {}
        #expect(schedule.forgetAll().count == 1)
        loop.advance(by: .seconds(1))
        #expect(due.requests.isEmpty && schedule.isEmpty)
    }
}
