import LatchkeySim
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `PendingRefresh` on its own, on a manual clock.
@Suite struct PendingRefreshTests {
    let loop = ManualEventLoop()
    let refresh: PendingRefresh
    final class Count { var value = 0 }
    let due = Count()

    init() {
        refresh = PendingRefresh(loop: loop)
        refresh.interval = .seconds(5)
        refresh.onDue = { [due] in due.value += 1 }
    }

    @Test func aWaitingEntryThatIsNotWatchedIsDueAfterAWholeInterval() {
        #expect(refresh.restart(waiting: true, watched: { false }))
        loop.advance(by: .milliseconds(4_999))
        #expect(due.value == 0)
        loop.advance(by: .milliseconds(1))
        #expect(due.value == 1)
        #expect(!refresh.isRunning, "the transport restarts it after its re-send")
    }

    @Test func eachChangeStartsTheIntervalOver() {
        refresh.restart(waiting: true, watched: { false })
        loop.advance(by: .seconds(4))
        refresh.restart(waiting: true, watched: { false })
        loop.advance(by: .seconds(4))
        #expect(due.value == 0)
        loop.advance(by: .seconds(1))
        #expect(due.value == 1)
    }

    @Test func noTimerWhileTheWatchCoversThemOrNothingWaits() {
        var asked = 0
        #expect(!refresh.restart(waiting: true, watched: { asked += 1; return true }))
        #expect(!refresh.restart(waiting: false, watched: { asked += 1; return false }))
        #expect(asked == 1, "the watch is asked for only when something waits")
        loop.advance(by: .seconds(60))
        #expect(due.value == 0 && !refresh.isRunning)
    }

    @Test func cancelStopsIt() {
        refresh.restart(waiting: true, watched: { false })
        refresh.cancel()
        loop.advance(by: .seconds(60))
        #expect(due.value == 0)
    }
}
