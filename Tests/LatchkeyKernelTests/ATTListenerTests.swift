#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// `ATTListener` on its own, without a transport: a fake listening socket whose far ends
/// stand for centrals.
@Suite struct ATTListenerTests {
    let loop = PosixEventLoop()
    let sockets = FakeLinkSockets()
    let listener: ATTListener
    final class Heard {
        var accepted: [BluetoothAddress] = []
        var fds: [CInt] = []
        var failures: [KernelError] = []
        deinit { for fd in fds { Glibc.close(fd) } }
    }
    let heard = Heard()

    init() {
        listener = ATTListener(sockets: sockets, loop: loop)
        listener.onAccept = { [heard] fd, peer in heard.accepted.append(peer); heard.fds.append(fd) }
        listener.onFailure = { [heard] in heard.failures.append($0) }
    }

    @Test func eachCentralThatLinksIsHandedOnWithItsAddress() throws {
        try listener.open(on: TransportWorld.lock)
        #expect(sockets.listened == [TransportWorld.lock])
        let far = try #require(sockets.listener).push(TransportWorld.phone)
        defer { Glibc.close(far) }
        #expect(try loop.run(until: { heard.accepted == [TransportWorld.phone] }, timeout: .seconds(2)))
        #expect(heard.failures.isEmpty)
    }

    @Test func openingTwiceListensOnceAndClosingStopsIt() throws {
        try listener.open(on: TransportWorld.lock)
        try listener.open(on: TransportWorld.lock)
        #expect(sockets.listened.count == 1)
        listener.close()
        #expect(!listener.isOpen)
        #expect(sockets.listener?.isClosed == true)
    }

    @Test func anAcceptErrorIsReportedAndTheListenerAcceptsAfterTheBackoff() throws {
        listener.backoff = (first: .milliseconds(10), cap: .milliseconds(20))
        try listener.open(on: TransportWorld.lock)
        let fake = try #require(sockets.listener)
        fake.failures = [KernelError(.system, "accept4: Too many open files (errno 24)", errno: Errno(rawValue: 24))]
        let far = fake.push(TransportWorld.phone)
        defer { Glibc.close(far) }
        #expect(try loop.run(until: { heard.accepted == [TransportWorld.phone] }, timeout: .seconds(2)))
        #expect(heard.failures.count == 1)
        #expect(heard.failures.first?.message.hasPrefix("ATT listener: ") == true)
        #expect(!fake.isClosed)
    }
}
