import LatchkeyTransport
import Testing

@testable import LatchkeyPosix

/// Accept errors never stop a listener or spin the loop.
@Suite struct AcceptorTests {
    /// The process runs out of descriptors: accept4 fails with EMFILE, the listener pauses
    /// instead of closing or spinning, and accepts the waiting clients once descriptors are
    /// back. The EMFILE is scripted (the first attempt), the accepts after it are the kernel's.
    /// Not a real EMFILE: RLIMIT_NOFILE is per process, and lowered here it failed a parallel
    /// test's open() (seen once); run in a child process (a Swift Testing exit test), the whole
    /// `swift test` hung twice: on Linux the exit test's waiter waits on every child
    /// (waitid(P_ALL, WNOWAIT)) and spun on a zombie another test had left.
    /// (`SeqPacketListener.acceptOne` passes the kernel's errno on as it is.)
    @Test func outOfDescriptorsPausesTheListenerAndItAcceptsOnceTheyReturn() throws {
        let dir = try RuntimeDirectory.makeTemporary()
        defer { RuntimeDirectory.remove(dir) }
        let loop = PosixEventLoop()
        let listener = try SeqPacketListener(path: dir + "/control.sock")
        var accepted: [SeqPacketSocket] = [], attempts = 0, pauses: [String] = []
        let acceptor = Acceptor(fileDescriptor: listener.fileDescriptor, loop: loop, first: .milliseconds(100),
                                cap: .milliseconds(400)) {
            attempts += 1
            if attempts == 1 { return .failed(.tooManyOpenFiles, "accept4: errno 24 (EMFILE)") }
            return listener.acceptOne { accepted.append($0) }
        }
        acceptor.onPause = { failure, _ in pauses.append(failure) }
        let clients = try (0..<2).map { _ in try SeqPacketSocket.connect(to: dir + "/control.sock") }
        acceptor.acceptWaiting()
        #expect(accepted.isEmpty)
        #expect(attempts == 1, "one failure pauses: no retry in a loop")
        #expect(acceptor.isPaused)
        #expect(pauses == ["accept4: errno 24 (EMFILE)"])
        // While paused the loop does not call accept, though two clients wait (no spin).
        _ = try loop.run(until: { false }, timeout: .milliseconds(30))
        #expect(attempts == 1)
        // Then it accepts again, both clients.
        #expect(try loop.run(until: { accepted.count == 2 }, timeout: .seconds(2)))
        #expect(!acceptor.isPaused)
        withExtendedLifetime(clients) {}
    }

    /// An error of the connection itself (ECONNABORTED) drops that one and takes the next.
    @Test func aConnectionErrorDropsOnlyThatConnection() throws {
        let loop = PosixEventLoop()
        let (ours, theirs) = try SeqPacketSocket.pair()
        var script: [Acceptor.Attempt] = [.failed(.connectionAborted, "accept4: ECONNABORTED"), .accepted, .empty]
        var pauses = 0
        let acceptor = Acceptor(fileDescriptor: ours.fileDescriptor, loop: loop) { script.removeFirst() }
        acceptor.onPause = { _, _ in pauses += 1 }
        acceptor.acceptWaiting()
        #expect(script.isEmpty)
        #expect(acceptor.droppedConnections == 1)
        #expect(pauses == 0 && !acceptor.isPaused)
        withExtendedLifetime(theirs) {}
    }

    /// A failure that does not go away is tried at a doubling interval, capped: a bounded
    /// number of calls, never a busy loop.
    @Test func aLastingFailureIsRetriedAtTheBackoffOnly() throws {
        let loop = PosixEventLoop()
        let (ours, theirs) = try SeqPacketSocket.pair()
        #expect(try theirs.send([1]) == .sent)  // readable for as long as the test runs
        var attempts = 0
        var delays: [Duration] = []
        let acceptor = Acceptor(fileDescriptor: ours.fileDescriptor, loop: loop, first: .milliseconds(10),
                                cap: .milliseconds(40)) {
            attempts += 1
            return .failed(.tooManyOpenFiles, "accept4: EMFILE")
        }
        acceptor.onPause = { _, delay in delays.append(delay) }
        _ = try loop.run(until: { false }, timeout: .milliseconds(200))
        #expect(delays.prefix(4) == [.milliseconds(10), .milliseconds(20), .milliseconds(40), .milliseconds(40)])
        #expect(attempts <= 8, "10+20+40+40+40+40 ms: at most 7 calls in 200 ms, got \(attempts)")
        #expect(attempts == delays.count)
    }
}
