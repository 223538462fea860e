/// Capped exponential backoff: 1 s, 2 s, 4 s ... up to `cap`, back to the start after a success.
public struct ReconnectBackoff: Sendable {
    public let initial: Duration
    public let cap: Duration
    private var current: Duration?

    public init(initial: Duration = .seconds(1), cap: Duration = .seconds(60)) {
        self.initial = initial
        self.cap = cap
    }

    /// The wait before the next attempt.
    public mutating func next() -> Duration {
        let delay = current.map { min($0 * 2, cap) } ?? initial
        current = delay
        return delay
    }

    public mutating func reset() { current = nil }
}
