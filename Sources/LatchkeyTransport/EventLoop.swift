/// The single-threaded loop everything above the transport runs on: like a Core Bluetooth
/// delegate queue, all callbacks happen on one loop, one at a time. That makes the simulated
/// world deterministic (`ManualEventLoop.advance(by:)` runs every consequence of moving time
/// before it returns); the kernel build runs the same code on a loop that sleeps in poll until
/// an fd or a timer is due. Not thread-safe: a loop and what is scheduled on it belong to the
/// thread that runs it.
public protocol EventLoop: AnyObject {
    /// Monotonic time now.
    var now: Instant { get }

    /// Runs `work` once `deadline` is reached (immediately on the next turn if it has passed).
    /// Work due at the same instant runs in the order it was scheduled.
    @discardableResult
    func schedule(at deadline: Instant, _ work: @escaping () -> Void) -> Scheduled

    /// Runs `work` on the next turn of the loop, after the current callback returns.
    /// Used to break re-entrancy: a callback never calls back into its caller synchronously.
    func execute(_ work: @escaping () -> Void)
}

extension EventLoop {
    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping () -> Void) -> Scheduled {
        schedule(at: now + delay, work)
    }
}

/// A handle on scheduled work; `cancel()` makes sure it will not run.
public final class Scheduled {
    public private(set) var isCancelled = false
    public private(set) var hasRun = false
    public let deadline: Instant
    private var work: (() -> Void)?

    public init(deadline: Instant, work: @escaping () -> Void) {
        self.deadline = deadline
        self.work = work
    }

    /// Cancels the work if it has not run yet. Idempotent.
    public func cancel() {
        isCancelled = true
        work = nil
    }

    /// Called by the loop when the deadline is reached.
    public func fire() {
        guard !isCancelled, let w = work else { return }
        work = nil
        hasRun = true
        w()
    }

    public var isPending: Bool { !isCancelled && !hasRun }
}
