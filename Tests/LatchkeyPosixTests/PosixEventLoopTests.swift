import LatchkeyTransport
import Testing

@testable import LatchkeyPosix

/// These run on real time (the only tests allowed to): deadlines are tens of
/// milliseconds, every wait is bounded, and they assert order, not exact timing.
@Suite struct PosixEventLoopTests {
    @Test func timersFireInDeadlineOrderThenSchedulingOrder() throws {
        let loop = PosixEventLoop()
        var fired: [String] = []
        let start = loop.now
        loop.schedule(after: .milliseconds(30)) { fired.append("30ms") }
        loop.schedule(after: .milliseconds(10)) { fired.append("10ms") }
        let same = start + .milliseconds(20)
        loop.schedule(at: same) { fired.append("20ms-a") }
        loop.schedule(at: same) { fired.append("20ms-b") }
        let done = try loop.run(until: { fired.count == 4 }, timeout: .seconds(2))
        #expect(done)
        #expect(fired == ["10ms", "20ms-a", "20ms-b", "30ms"])
        #expect(loop.now - start >= .milliseconds(30), "a timer never fires before its deadline")
        #expect(loop.pendingTimerCount == 0)
    }

    @Test func executeRunsAfterTheCurrentCallbackAndCancelledTimersNever() throws {
        let loop = PosixEventLoop()
        var log: [String] = []
        let cancelled = loop.schedule(after: .milliseconds(5)) { log.append("cancelled") }
        // "later" is scheduled from the same callback, after the execute: a timer that is due
        // at once still runs after work queued before it. (It used to be a separate 15 ms
        // timer, which a loaded machine delayed past the 10 ms one, making both due together:
        // the order then depended on scheduling latency, and the test failed under load.)
        loop.schedule(after: .milliseconds(10)) {
            loop.execute { log.append("executed") }
            loop.schedule(after: .zero) { log.append("later") }
            log.append("timer")
        }
        cancelled.cancel()
        #expect(try loop.run(until: { log.count == 3 }, timeout: .seconds(2)))
        #expect(log == ["timer", "executed", "later"])
    }

    @Test func boundedWaitReturnsFalseAfterItsDeadline() throws {
        let loop = PosixEventLoop()
        let start = loop.now
        #expect(try loop.run(until: { false }, timeout: .milliseconds(20)) == false)
        let elapsed = loop.now - start
        #expect(elapsed >= .milliseconds(20))
        #expect(elapsed < .seconds(2))
    }

    @Test func stopEndsRun() throws {
        let loop = PosixEventLoop()
        var ticks = 0
        loop.schedule(after: .milliseconds(5)) { ticks += 1 }
        loop.schedule(after: .milliseconds(10)) { ticks += 1; loop.stop() }
        loop.schedule(after: .seconds(60)) { ticks += 100 }
        try loop.run()
        #expect(ticks == 2)
    }

    @Test func readinessOverASocketPair() throws {
        let loop = PosixEventLoop()
        let (a, b) = try SeqPacketSocket.pair()
        var received: [[UInt8]] = []
        let watch = loop.watch(fd: b.fileDescriptor, events: .readable) { events in
            #expect(events.contains(.readable))
            while case .message(let m) = try! b.receive() { received.append(m) }
        }
        #expect(try a.send([1, 2, 3]) == .sent)
        #expect(try a.send([4]) == .sent)
        #expect(try loop.run(until: { received.count == 2 }, timeout: .seconds(2)))
        #expect(received == [[1, 2, 3], [4]], "message boundaries are preserved")

        watch.cancel()
        #expect(try a.send([5]) == .sent)
        try loop.runOnce(timeout: .milliseconds(10))
        #expect(received.count == 2, "a cancelled watch is not called")
    }

    @Test func hangUpIsReportedWhenThePeerCloses() throws {
        let loop = PosixEventLoop()
        let (a, b) = try SeqPacketSocket.pair()
        var sawEnd = false
        let watch = loop.watch(fd: b.fileDescriptor, events: .readable) { _ in
            if (try? b.receive()) == .endOfStream { sawEnd = true }
        }
        a.close()
        #expect(try loop.run(until: { sawEnd }, timeout: .seconds(2)))
        watch.cancel()
    }

    @Test func signalIsDeliveredToItsHandlersOnTheLoop() throws {
        let loop = PosixEventLoop()
        var first = 0, second = 0
        let one = try loop.onSignal(.user1) { first += 1 }
        let two = try loop.onSignal(.user1) { second += 1 }
        Signal.user1.raise()
        #expect(first == 0, "the handler runs on the loop, not inside the signal handler")
        #expect(try loop.run(until: { first == 1 && second == 1 }, timeout: .seconds(2)))
        one.cancel()
        Signal.user1.raise()
        #expect(try loop.run(until: { second == 2 }, timeout: .seconds(2)))
        #expect(first == 1, "a cancelled signal watch is not called")
        two.cancel()
    }
}

