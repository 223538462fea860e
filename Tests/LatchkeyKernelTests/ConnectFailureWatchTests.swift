import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// `ConnectFailureWatch` on its own, without a transport: a fake controller's events in,
/// "re-send now" out.
@Suite struct ConnectFailureWatchTests {
    let loop = PosixEventLoop()
    let events = FakeHCIEvents()
    let watch: ConnectFailureWatch
    final class Count { var value = 0 }
    let resends = Count()

    init() {
        watch = ConnectFailureWatch(events: events, loop: loop)
        watch.onFailedAttempt = { [resends] in resends.value += 1 }
    }

    func until(_ condition: @escaping () -> Bool) throws {
        #expect(try loop.run(until: condition, timeout: .seconds(2)))
    }

    @Test func aRefusedCancelAsksForTheResendAtOnceAndDropsTheDelayedOne() throws {
        watch.settleDelay = .seconds(30)
        #expect(watch.open(index: TransportWorld.hci0) == .open)
        events.emit(FakeHCIEvents.connectionComplete(status: 0x3E))
        try until { watch.resendIsWaiting }
        events.emit(FakeHCIEvents.cancelComplete(status: 0x0C))
        try until { resends.value == 1 }
        #expect(!watch.resendIsWaiting)
        #expect(watch.eventsReceived == 2)
    }

    @Test func aFailedCompleteAloneAsksAfterTheSettleDelay() throws {
        watch.settleDelay = .milliseconds(30)
        #expect(watch.open(index: TransportWorld.hci0) == .open)
        events.emit(FakeHCIEvents.connectionComplete(status: 0x3E, subevent: 0x0A))
        try until { watch.resendIsWaiting }
        #expect(resends.value == 0, "not while the kernel may still cancel")
        try until { resends.value == 1 }
        #expect(!watch.resendIsWaiting)
    }

    @Test func otherEventsAskForNothing() throws {
        #expect(watch.open(index: TransportWorld.hci0) == .open)
        events.emit(FakeHCIEvents.connectionComplete(status: 0x00))
        events.emit(FakeHCIEvents.cancelComplete(status: 0x00))
        events.emit(FakeHCIEvents.advertisingReport)
        try until { watch.eventsReceived == 3 }
        #expect(resends.value == 0 && !watch.resendIsWaiting)
    }

    @Test func aRefusalIsReturnedOnceUntilTheControllerComesBack() {
        events.openFailure = KernelError(.permissionDenied, "no CAP_NET_RAW")
        #expect(watch.open(index: TransportWorld.hci0) == .refused(events.openFailure))
        #expect(watch.open(index: TransportWorld.hci0) == .refused(nil), "said once")
        #expect(events.opened == [TransportWorld.hci0], "and not tried again")
        watch.forgetRefusal()
        events.openFailure = nil
        #expect(watch.open(index: TransportWorld.hci0) == .open)
    }

    @Test func anotherIndexClosesTheOldWatchAndClosingDropsAWaitingResend() throws {
        watch.settleDelay = .seconds(30)
        #expect(watch.open(index: TransportWorld.hci0) == .open)
        let first = events.source
        #expect(watch.open(index: MgmtIndex(1)) == .open)
        #expect(first?.isClosed == true)
        #expect(watch.index == MgmtIndex(1))
        events.emit(FakeHCIEvents.connectionComplete(status: 0x3E))
        try until { watch.resendIsWaiting }
        watch.close()
        #expect(!watch.resendIsWaiting && watch.index == nil)
    }
}
