import LatchkeyTransport

/// The real-time `EventLoop`: one thread, sleeping in ppoll(2) until an fd is ready or
/// the next timer is due (swift-nio's `SelectableEventLoop`, BlueZ's `io-mainloop.c`).
/// There is no periodic wake-up: with nothing due and no fd ready the thread sleeps.
///
/// `now` is CLOCK_MONOTONIC. Timers due at the same instant run in the order they were
/// scheduled; `execute` is a timer due now. Not thread-safe: the loop and everything on
/// it belong to the thread that calls `run`.
public final class PosixEventLoop: EventLoop {
    private var timers = TimerQueue()
    private var watches: [Watch] = []
    private var isStopping = false
    var signalRelay: SignalRelay?

    public init() {}

    deinit { signalRelay?.close() }

    public var now: Instant { Instant(nanoseconds: Syscalls.monotonicNanoseconds()) }

    @discardableResult
    public func schedule(at deadline: Instant, _ work: @escaping () -> Void) -> Scheduled {
        // A deadline already passed counts as now, so it queues behind work already due.
        let item = Scheduled(deadline: max(deadline, now), work: work)
        timers.insert(item)
        return item
    }

    public func execute(_ work: @escaping () -> Void) {
        schedule(at: now, work)
    }

    /// Calls `handler` on the loop whenever `fd` is ready for `events` (or hung up / in
    /// error, which poll always reports). The handler should consume the readiness (read
    /// until would-block, drop writable interest when idle) or it is called again.
    public func watch(fd: CInt, events: IOEvents, _ handler: @escaping (IOEvents) -> Void) -> Watch {
        let watch = Watch(fileDescriptor: fd, events: events, handler: handler)
        watches.append(watch)
        return watch
    }

    /// Runs until `stop()` is called from a callback.
    public func run() throws(SystemError) {
        isStopping = false
        while !isStopping { try runOnce(timeout: nil) }
    }

    /// Makes `run()` return after the current callback.
    public func stop() { isStopping = true }

    /// One turn: runs due timers, waits (at most `timeout`, nil = until something happens)
    /// for fd readiness or the next timer, dispatches what became ready, runs due timers.
    public func runOnce(timeout: Duration?) throws(SystemError) {
        try turn(timeout: timeout, unless: { false })
    }

    /// One turn of `runOnce`; when `satisfied` holds after the due timers ran, it returns
    /// before blocking in poll: the work that just ran may be what `run(until:)` waits for,
    /// and the wait would otherwise sleep out its whole timeout.
    private func turn(timeout: Duration?, unless satisfied: () -> Bool) throws(SystemError) {
        runDueTimers()
        if satisfied() { return }
        watches.removeAll { $0.isCancelled }
        var wait = timeout?.nanoseconds
        if let next = timers.first() {
            let untilNext = max(0, (next.deadline - now).nanoseconds)
            wait = min(wait ?? untilNext, untilNext)
        }
        if isStopping { wait = 0 }
        let polled = watches
        var entries = polled.map { watch in
            Syscalls.PollEntry(fd: watch.events.isEmpty ? -1 : watch.fileDescriptor, events: Self.pollEvents(watch.events))
        }
        if try Syscalls.poll(&entries, timeoutNanoseconds: wait) > 0 {
            for (watch, entry) in zip(polled, entries) where entry.revents != 0 && !watch.isCancelled {
                watch.handler?(Self.ioEvents(entry.revents))
            }
        }
        runDueTimers()
    }

    /// Turns the loop until `condition` holds or `timeout` (real time) has passed; returns
    /// whether the condition held. For tests and bounded waits: it sleeps in poll, never spins.
    @discardableResult
    public func run(until condition: () -> Bool, timeout: Duration) throws(SystemError) -> Bool {
        let deadline = now + timeout
        while !condition() {
            let left = deadline - now
            if left <= .zero { return false }
            try turn(timeout: left, unless: condition)
        }
        return true
    }

    /// Runs the timers due at the start of this batch. Work they schedule for "now" runs in
    /// the next batch, after a zero-timeout poll, so a self-rescheduling timer cannot
    /// starve the fds.
    private func runDueTimers() {
        let horizon = now
        while let item = timers.popFirst(dueAt: horizon) { item.fire() }
    }

    /// Number of timers still to run (tests assert nothing is left running).
    public var pendingTimerCount: Int { timers.liveCount }

    static func pollEvents(_ events: IOEvents) -> Int16 {
        (events.contains(.readable) ? Syscalls.pollIn : 0) | (events.contains(.writable) ? Syscalls.pollOut : 0)
    }

    static func ioEvents(_ revents: Int16) -> IOEvents {
        var events: IOEvents = []
        if revents & Syscalls.pollIn != 0 { events.insert(.readable) }
        if revents & Syscalls.pollOut != 0 { events.insert(.writable) }
        if revents & Syscalls.pollHangUp != 0 { events.insert(.hangUp) }
        if revents & Syscalls.pollError != 0 { events.insert(.error) }
        return events
    }
}
