import LatchkeyTransport

/// Our `EmbeddedEventLoop`: virtual time starts at zero and moves only when a test (or the
/// simulated air's driver) says so. Everything due runs, in deadline order and, for equal
/// deadlines, in the order it was scheduled, before `advance` returns.
public final class ManualEventLoop: EventLoop {
    public private(set) var now: Instant = .zero

    private var timers = TimerHeap()
    private var sequence: UInt64 = 0

    public init() {}

    @discardableResult
    public func schedule(at deadline: Instant, _ work: @escaping () -> Void) -> Scheduled {
        let item = Scheduled(deadline: max(deadline, now), work: work)
        sequence += 1
        timers.insert(item, sequence: sequence)
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
        while let next = timers.peek(), next.deadline <= target {
            timers.removeFirst()
            if next.isCancelled { continue }
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
    public var nextDeadline: Instant? {
        while let top = timers.peek(), top.isCancelled { timers.removeFirst() }
        return timers.peek()?.deadline
    }

    /// Number of live scheduled items (a test can assert nothing is left running).
    public var pendingCount: Int { timers.liveCount }
}

/// A binary min-heap keyed on (deadline, insertion sequence).
struct TimerHeap {
    private var items: [(key: (Int64, UInt64), item: Scheduled)] = []

    mutating func insert(_ item: Scheduled, sequence: UInt64) {
        items.append(((item.deadline.nanoseconds, sequence), item))
        var i = items.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            if items[i].key < items[p].key { items.swapAt(i, p); i = p } else { break }
        }
    }

    func peek() -> Scheduled? { items.first?.item }

    mutating func removeFirst() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count && items[l].key < items[m].key { m = l }
            if r < items.count && items[r].key < items[m].key { m = r }
            if m == i { break }
            items.swapAt(i, m); i = m
        }
    }

    var liveCount: Int { items.reduce(0) { $0 + ($1.item.isPending ? 1 : 0) } }
}
