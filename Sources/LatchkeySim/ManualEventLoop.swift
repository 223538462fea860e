import LatchkeyTransport

/// Our `EmbeddedEventLoop`: virtual time starts at zero and moves only when a test (or the
/// simulated air's driver) says so. Everything due runs, in deadline order and, for equal
/// deadlines, in the order it was scheduled, before `advance` returns.
public final class ManualEventLoop: EventLoop {
    public private(set) var now: Instant = .zero

    private var timers = TimerQueue()

    public init() {}

    @discardableResult
    public func schedule(at deadline: Instant, _ work: @escaping () -> Void) -> Scheduled {
        let item = Scheduled(deadline: max(deadline, now), work: work)
        timers.insert(item)
        return item
    }

    public func execute(_ work: @escaping () -> Void) {
        schedule(at: now, work)
    }

    /// Runs everything due now (including work that due work schedules for now).
    public func run() {
        advance(to: now)
    }

    /// Moves time forward by `duration`, running every timer that falls due on the way at
    /// its own deadline (so `now` inside a callback is that callback's deadline).
    public func advance(by duration: Duration) {
        advance(to: now + duration)
    }

    public func advance(to target: Instant) {
        precondition(target >= now, "time only moves forward")
        while let next = timers.popFirst(dueAt: target) {
            now = next.deadline
            next.fire()
        }
        now = target
    }

    /// Advances in steps until `condition` holds or `limit` has passed. Returns whether it held.
    /// Time moves only to the next due timer each step, so the condition is checked after every
    /// event rather than at a fixed polling period.
    @discardableResult
    public func advance(until condition: () -> Bool, limit: Duration) -> Bool {
        let end = now + limit
        run()
        while !condition() {
            guard let next = nextDeadline, next <= end else {
                advance(to: end)
                return condition()
            }
            advance(to: next)
        }
        return true
    }

    /// The deadline of the earliest live timer, if any.
    public var nextDeadline: Instant? { timers.first()?.deadline }

    /// Number of live scheduled items (a test can assert nothing is left running).
    public var pendingCount: Int { timers.liveCount }
}
