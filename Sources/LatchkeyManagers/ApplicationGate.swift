import LatchkeyTransport

/// What a gate tells its owner about the application layer (the agent turns these into
/// timeline events and log lines).
public enum GateReport: Equatable, Sendable {
    case suspended
    /// Resumed; `delivered` queued events went to the app, `lost` had overflowed the queue.
    case resumed(delivered: Int, lost: Int)
    /// The queue was full: `event` was not queued. Reported at once, for every lost event.
    case overflow(event: String, capacity: Int, lostSoFar: Int)
    /// A suspended agent in background mode was woken for `event`.
    case woke(event: String)
    /// The wake-up's work ended after `duration`.
    case wakeHandled(event: String, duration: Duration)
    /// The wake-up's work is still going after the budget (a warning; reported once per wake).
    case wakeOverBudget(event: String, elapsed: Duration, budget: Duration)
}

/// Sits between a manager and the application's delegates (the agent): while the
/// application layer is suspended, a foreground-only app's events are queued and delivered
/// in order on resume (bounded, and an overflow is reported, never silent); a background
/// app is woken for each event instead, and its work is timed against the wake budget
/// ("finish a wake-up's work within about 10 seconds").
///
/// Single-threaded like everything on the loop.
public final class ApplicationGate {
    public let loop: any EventLoop
    public private(set) var isSuspended = false
    public var mode: ExecutionMode
    /// How many events a suspension can hold.
    public let capacity: Int
    /// The wake-up budget (about 10 s, Apple's background execution guidance).
    public var wakeBudget: Duration
    public var onReport: ((GateReport) -> Void)?

    public static let defaultCapacity = 1024
    public static let defaultWakeBudget: Duration = .seconds(10)

    private var queue: [(label: String, work: () -> Void)] = []
    private var lost = 0
    private var draining = false
    private var wake: (event: String, started: Instant, watchdog: Scheduled, warned: Bool)?
    private var openWork = 0

    public init(loop: any EventLoop, mode: ExecutionMode = .foreground, capacity: Int = ApplicationGate.defaultCapacity,
                wakeBudget: Duration = ApplicationGate.defaultWakeBudget) {
        precondition(capacity > 0, "a gate needs room for at least one event")
        self.loop = loop; self.mode = mode; self.capacity = capacity; self.wakeBudget = wakeBudget
    }

    /// Events waiting for the application layer.
    public var queuedEvents: [String] { queue.map(\.label) }

    /// Whether events go to the queue right now (suspended, foreground-only).
    public var isHolding: Bool { isSuspended && mode == .foreground }

    /// Hands one event to the application layer: now, as a wake-up, or queued.
    public func deliver(_ label: String, _ work: @escaping () -> Void) {
        if draining || isHolding {
            guard queue.count < capacity else {
                lost += 1
                onReport?(.overflow(event: label, capacity: capacity, lostSoFar: lost))
                return
            }
            queue.append((label, work))
        } else if isSuspended {
            runAsWake(label, work)
        } else {
            work()
        }
    }

    public func suspend() {
        guard !isSuspended else { return }
        isSuspended = true
        onReport?(.suspended)
    }

    /// Resumes and delivers the queue in order. Events arriving during delivery go behind it.
    public func resume() {
        guard isSuspended else { return }
        isSuspended = false
        let delivered = drain()
        let lostNow = lost
        lost = 0
        onReport?(.resumed(delivered: delivered, lost: lostNow))
    }

    /// Switches the mode; a suspended app becoming background is woken for what was queued.
    public func setMode(_ mode: ExecutionMode) {
        self.mode = mode
        if isSuspended && mode == .background && !queue.isEmpty {
            runAsWake("queued events") { _ = self.drain() }
        }
    }

    @discardableResult
    private func drain() -> Int {
        draining = true
        defer { draining = false }
        var count = 0
        while !queue.isEmpty {
            let next = queue.removeFirst()
            next.work()
            count += 1
        }
        return count
    }

    // MARK: Wake budget

    /// Work a woken app keeps going after its callback returned (a GATT exchange, a
    /// command): the wake-up lasts until every token is ended.
    public final class BackgroundWork {
        private weak var gate: ApplicationGate?
        private var ended = false
        init(gate: ApplicationGate) { self.gate = gate }
        /// Ended: by `end()`, or at once when begun outside a wake-up (nothing to extend).
        public var isEnded: Bool { ended }
        public func end() {
            guard !ended else { return }
            ended = true
            gate?.workEnded()
        }
    }

    /// Holds the current wake-up open until `end()`; outside a wake-up it measures nothing.
    public func beginBackgroundWork() -> BackgroundWork {
        if wake != nil { openWork += 1 }
        let token = BackgroundWork(gate: self)
        if wake == nil { token.end() }
        return token
    }

    private func workEnded() {
        guard wake != nil, openWork > 0 else { return }
        openWork -= 1
        if openWork == 0 { finishWake() }
    }

    private func runAsWake(_ label: String, _ work: () -> Void) {
        if wake == nil {
            let started = loop.now
            let watchdog = loop.schedule(at: started + wakeBudget) { [weak self] in self?.budgetExpired() }
            wake = (label, started, watchdog, false)
            onReport?(.woke(event: label))
        }
        work()
        if openWork == 0 { finishWake() }
    }

    private func budgetExpired() {
        guard var w = wake, !w.warned else { return }
        w.warned = true
        wake = w
        onReport?(.wakeOverBudget(event: w.event, elapsed: loop.now - w.started, budget: wakeBudget))
    }

    private func finishWake() {
        guard let w = wake else { return }
        wake = nil
        w.watchdog.cancel()
        let duration = loop.now - w.started
        if duration > wakeBudget && !w.warned {
            onReport?(.wakeOverBudget(event: w.event, elapsed: duration, budget: wakeBudget))
        }
        onReport?(.wakeHandled(event: w.event, duration: duration))
    }
}
