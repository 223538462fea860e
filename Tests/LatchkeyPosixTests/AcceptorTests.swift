#if canImport(Glibc)
import Glibc
#endif
import LatchkeyTransport
import Testing

@testable import LatchkeyPosix

/// Accept errors never stop a listener or spin the loop (issue 14).
@Suite(.serialized) struct AcceptorTests {
    /// A listener with `Acceptor` on it, keeping what it accepts.
    final class Server {
        let listener: SeqPacketListener
        var accepted: [SeqPacketSocket] = []
        var attempts = 0
        var pauses: [String] = []
        var acceptor: Acceptor!

        init(path: String, loop: PosixEventLoop, first: Duration) throws {
            listener = try SeqPacketListener(path: path)
            acceptor = Acceptor(fileDescriptor: listener.fileDescriptor, loop: loop, first: first, cap: first * 4) {
                [unowned self] in
                self.attempts += 1
                return self.listener.acceptOne { self.accepted.append($0) }
            }
            acceptor.onPause = { [unowned self] failure, _ in self.pauses.append(failure) }
        }
    }

    /// The process runs out of descriptors: accept4 fails with EMFILE, the listener pauses
    /// instead of closing or spinning, and accepts the waiting clients once descriptors are
    /// back. RLIMIT_NOFILE is per process, so the whole check runs in a child process of its
    /// own (an exit test): lowered in this one, it could fail a parallel test's open().
    @Test func outOfDescriptorsPausesTheListenerAndItAcceptsOnceTheyReturn() async {
        await #expect(processExitsWith: .success) {
            // Each failed check exits with its own status (the child's issues stay in it).
            func check(_ ok: Bool, _ status: Int32) { if !ok { exit(status) } }
            guard let dir = try? RuntimeDirectory.makeTemporary() else { exit(10) }
            defer { RuntimeDirectory.remove(dir) }
            let loop = PosixEventLoop()
            guard let server = try? Server(path: dir + "/control.sock", loop: loop, first: .milliseconds(100)),
                  let clients = try? (0..<2).map({ _ in try SeqPacketSocket.connect(to: dir + "/control.sock") })
            else { exit(11) }

            var saved = rlimit()
            check(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved) == 0, 12)
            let next = dup(0)
            check(next >= 0, 13)
            close(next)
            var lowered = saved
            lowered.rlim_cur = rlim_t(next)  // every new descriptor would be >= the limit: EMFILE
            check(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &lowered) == 0, 14)
            server.acceptor.acceptWaiting()
            check(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved) == 0, 15)

            check(server.accepted.isEmpty, 16)
            check(server.attempts == 1, 17)  // one failure pauses: no retry in a loop
            check(server.acceptor.isPaused, 18)
            check(server.pauses.count == 1, 19)
            check(server.pauses.first?.contains("errno 24") == true, 20)  // EMFILE

            // While paused the loop does not call accept, though two clients wait (no spin).
            _ = try? loop.run(until: { false }, timeout: .milliseconds(30))
            check(server.attempts == 1, 21)
            // Then it accepts again, both clients.
            check((try? loop.run(until: { server.accepted.count == 2 }, timeout: .seconds(2))) == true, 22)
            check(!server.acceptor.isPaused, 23)
            withExtendedLifetime(clients) {}
        }
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
