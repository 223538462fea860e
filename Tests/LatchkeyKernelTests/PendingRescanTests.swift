import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `PendingRescan` on its own, without a transport: a fake controller's HCI events and a
/// stand-in for "where entries wait" in, re-sends and reports out.
@Suite struct PendingRescanTests {
    final class Side {
        var waitingOn: MgmtIndex? = TransportWorld.hci0
        var controllerUp = true
        var resends = 0
        var failures: [KernelError] = []
    }

    let loop = PosixEventLoop()
    let events = FakeHCIEvents()
    let side = Side()
    let rescan: PendingRescan

    init() {
        rescan = PendingRescan(events: events, loop: loop)
        rescan.waitingOn = { [side] in side.waitingOn }
        rescan.resend = { [side] in
            guard side.controllerUp else { return false }
            side.resends += 1
            return true
        }
        rescan.onFailure = { [side] in side.failures.append($0) }
        rescan.interval = .milliseconds(20)
        rescan.settleDelay = .milliseconds(20)
    }

    func until(_ condition: @escaping () -> Bool) throws {
        #expect(try loop.run(until: condition, timeout: .seconds(2)))
    }

    @Test func withTheWatchOpenThereIsNoTimerAndAFailedAttemptResends() throws {
        #expect(!rescan.restart(), "watched: no timer")
        #expect(rescan.watchIndex == TransportWorld.hci0)
        events.emit(FakeHCIEvents.connectionComplete(status: 0x3E))
        try until { side.resends == 1 }
        #expect(!rescan.isTimerRunning)
    }

    @Test func nothingWaitingOpensNothing() {
        side.waitingOn = nil
        #expect(!rescan.restart())
        #expect(rescan.watchIndex == nil && events.opened.isEmpty && !rescan.isTimerRunning)
    }

    @Test func aWatchThatCannotBeOpenedIsReportedOnceAndTheTimerResendsEachInterval() throws {
        events.openFailure = KernelError(.permissionDenied, "no CAP_NET_RAW")
        #expect(rescan.restart(), "the timer takes over")
        #expect(side.failures.count == 1)
        #expect(side.failures.first?.message.contains("re-sending pending connections every") == true)
        try until { side.resends == 2 }
        #expect(side.failures.count == 1, "said once")
        side.controllerUp = false
        try until { !rescan.isTimerRunning }
        #expect(side.resends == 2, "a controller that went down is not sent to, and the timer stops")
    }

    @Test func theControllerComingBackTriesARefusedWatchAgain() {
        events.openFailure = KernelError(.permissionDenied, "no CAP_NET_RAW")
        rescan.restart()
        events.openFailure = nil
        rescan.restart()
        #expect(rescan.watchIndex == nil, "refused until the controller comes back")
        rescan.detach()
        rescan.attach()
        #expect(!rescan.restart())
        #expect(rescan.watchIndex == TransportWorld.hci0)
    }

    @Test func closingStopsBoth() {
        events.openFailure = KernelError(.permissionDenied, "no CAP_NET_RAW")
        rescan.restart()
        rescan.close()
        #expect(!rescan.isTimerRunning && rescan.watchIndex == nil)
    }
}
