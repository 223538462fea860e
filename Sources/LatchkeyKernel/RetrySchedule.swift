import LatchkeyTransport

/// When each refused request is asked again: the kernel refused a mgmt command that carries
/// a wanted state (Busy, No Resources, Failed: the controller was in the middle of something),
/// so it is sent again after a capped backoff, until it takes or the wish is withdrawn. It
/// owns the refusals in a row, the timers of the next attempts and the `afterRequestsAnswered`
/// bodies that wait for them; the transport says what each request sends (`onDue`).
final class RetrySchedule {
    private let loop: any EventLoop
    /// One refused request: how many refusals in a row, and the timer of the next attempt.
    private var retries: [TransportRefusal.Request: (attempts: Int, timer: Scheduled?)] = [:]
    /// `afterRequestsAnswered` bodies waiting until no request waits for a retry.
    private var waiters: [() -> Void] = []

    /// How refused requests are asked again.
    var backoff: KernelTransport.RetryBackoff = .standard
    /// A request's next attempt is due: send what it wants again, if it is still wanted. Its
    /// entry stays (with no timer) until the answer comes: `took` or another `refused`.
    var onDue: ((TransportRefusal.Request) -> Void)?

    init(loop: any EventLoop) { self.loop = loop }

    /// Whether `request` waits for its next attempt after a refusal.
    func isRetrying(_ request: TransportRefusal.Request) -> Bool { retries[request] != nil }

    /// Whether any request does.
    var isEmpty: Bool { retries.isEmpty }

    /// The kernel refused `request`: its next attempt is scheduled. Returns which refusal in a
    /// row this is and the wait before the next attempt (for the report).
    func refused(_ request: TransportRefusal.Request) -> (attempt: Int, retryIn: Duration) {
        let attempt = (retries[request]?.attempts ?? 0) + 1
        retries[request]?.timer?.cancel()
        let delay = backoff.delay(after: attempt)
        let timer = loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.retries[request]?.timer = nil
            self.onDue?(request)
        }
        retries[request] = (attempt, timer)
        return (attempt, delay)
    }

    /// The kernel took `request` (or the wish was withdrawn): its refusals are over. Returns
    /// the waiting bodies released because no request waits any more, for the transport to
    /// run once the queue is answered.
    func took(_ request: TransportRefusal.Request) -> [() -> Void] {
        guard let retry = retries.removeValue(forKey: request) else { return [] }
        retry.timer?.cancel()
        return released()
    }

    /// The application asked again itself: its commands are the attempt, the timer's is not
    /// needed (the entry stays until their answer).
    func attemptNow(_ request: TransportRefusal.Request) {
        retries[request]?.timer?.cancel()
        retries[request]?.timer = nil
    }

    /// Drops every scheduled attempt (the controller went away, powered on, or the transport
    /// closes); returns the waiting bodies released, as `took` does.
    func forgetAll() -> [() -> Void] {
        guard !retries.isEmpty else { return [] }
        for retry in retries.values { retry.timer?.cancel() }
        retries = [:]
        return released()
    }

    /// Keeps `body` until no request waits for its next attempt; false (run it now) when none does.
    func wait(_ body: @escaping () -> Void) -> Bool {
        guard !retries.isEmpty else { return false }
        waiters.append(body)
        return true
    }

    private func released() -> [() -> Void] {
        guard retries.isEmpty else { return [] }
        defer { waiters = [] }
        return waiters
    }
}

/// A wanted state is never dropped: a mgmt command that carries one (power, advertising,
/// discovery, connection timing, an Add Device entry) and that the kernel refuses is sent
/// again after a capped backoff (`RetrySchedule`, `ControllerRequests`), until it takes or
/// the application withdraws the wish. Each refusal is reported to the delegate
/// (`didRefuse`) and to `onFailure`, and `afterRequestsAnswered` waits for it, so READY means taken.
extension KernelTransport {
    /// The wait before the next attempt: `first`, doubled after each refusal, at most `cap`.
    public struct RetryBackoff: Sendable, Equatable {
        public var first: Duration
        public var cap: Duration
        public init(first: Duration, cap: Duration) { self.first = first; self.cap = cap }

        /// Our choice: the kernel refuses while one HCI command is outstanding, itself bounded
        /// by HCI_CMD_TIMEOUT (2 s), so the first retry after 0.5 s usually takes; a kernel that
        /// keeps refusing is asked at most every 30 s, so a phone still links within 30 s of
        /// the kernel taking requests again.
        public static let standard = RetryBackoff(first: .milliseconds(500), cap: .seconds(30))

        /// The wait after the `attempt`-th refusal in a row (1-based).
        public func delay(after attempt: Int) -> Duration {
            var delay = first
            for _ in 1..<max(attempt, 1) {
                delay = delay * 2
                if delay >= cap { return cap }
            }
            return min(delay, cap)
        }
    }
}
