import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// `ConnectionTimingWatch` on its own, without a transport: a fake controller's events in,
/// the intervals it learns and hands on out.
@Suite struct ConnectionTimingWatchTests {
    let loop = PosixEventLoop()
    let events = FakeHCIEvents()
    let watch: ConnectionTimingWatch
    /// Each timing handed on: peer bits, handle, interval.
    final class Heard { var timings: [(peer: UInt64, handle: UInt16, interval: Duration)] = [] }
    let heard = Heard()

    init() {
        watch = ConnectionTimingWatch(events: events, loop: loop)
        watch.onTiming = { [heard] in heard.timings.append(($0, $1, $2)) }
    }

    func until(_ condition: @escaping () -> Bool) throws {
        #expect(try loop.run(until: condition, timeout: .seconds(2)))
    }

    @Test func aCompleteThenAnUpdateAreHandedOnAndRemembered() throws {
        #expect(watch.open(index: TransportWorld.hci0) == nil)
        events.emit(KernelTransportConnectionTimingTests.complete(units: 24))
        try until { heard.timings.count == 1 }
        #expect(heard.timings[0].peer == TransportWorld.phone.value && heard.timings[0].handle == 0x40)
        #expect(watch.timing(of: TransportWorld.phone)?.interval == .milliseconds(30))
        events.emit(KernelTransportConnectionTimingTests.update(units: 80))
        try until { heard.timings.count == 2 }
        #expect(heard.timings[1].interval == .milliseconds(100))
        #expect(watch.timing(of: TransportWorld.phone)?.interval == .milliseconds(100))
        #expect(watch.eventsReceived == 2)
    }

    @Test func anUpdateOfAHandleItNeverSawConnectAsksWhoseLinkItIs() throws {
        var asked: [UInt16] = []
        watch.peerOfHandle = { asked.append($0); return $0 == 0x40 ? TransportWorld.phone.value : nil }
        #expect(watch.open(index: TransportWorld.hci0) == nil)
        events.emit(KernelTransportConnectionTimingTests.update(units: 40))
        try until { heard.timings.count == 1 }
        #expect(asked == [0x40])
        #expect(watch.timing(of: TransportWorld.phone)?.interval == .milliseconds(50))
    }

    @Test func aRefusedOpenIsReturnedOnceUntilTheControllerComesBack() {
        events.openFailure = KernelError(.permissionDenied, "no CAP_NET_RAW")
        let refused = watch.open(index: TransportWorld.hci0)
        #expect(refused?.message.contains("connection intervals stay unknown") == true)
        #expect(watch.open(index: TransportWorld.hci0) == nil, "said once")
        #expect(events.openedTiming.count == 1, "and not tried again")
        watch.forgetRefusal()
        events.openFailure = nil
        #expect(watch.open(index: TransportWorld.hci0) == nil)
        #expect(events.openedTiming.count == 2)
    }

    @Test func reopeningOnTheSameIndexKeepsTheWatchAndForgettingAPeerForgetsItsTiming() throws {
        #expect(watch.open(index: TransportWorld.hci0) == nil)
        #expect(watch.open(index: TransportWorld.hci0) == nil)
        #expect(events.openedTiming == [TransportWorld.hci0])
        events.emit(KernelTransportConnectionTimingTests.complete(units: 24))
        try until { watch.timing(of: TransportWorld.phone) != nil }
        watch.forget(TransportWorld.phone)
        #expect(watch.timing(of: TransportWorld.phone) == nil)
        watch.close()
        #expect(events.source?.isClosed == true)
    }
}
