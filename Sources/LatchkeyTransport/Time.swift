/// A point on a monotonic clock, in nanoseconds from an arbitrary origin.
///
/// Every timer, timeout and backoff in Latchkey is expressed against an injected
/// `EventLoop`'s `now`, never against the wall clock, so tests move time by hand.
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public static let zero = Instant(nanoseconds: 0)

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: Instant, d: Duration) -> Instant { Instant(nanoseconds: a.nanoseconds &+ d.nanoseconds) }
    public static func - (a: Instant, d: Duration) -> Instant { Instant(nanoseconds: a.nanoseconds &- d.nanoseconds) }
    public static func - (a: Instant, b: Instant) -> Duration { .nanoseconds(a.nanoseconds &- b.nanoseconds) }
    public static func += (a: inout Instant, d: Duration) { a = a + d }

    public var description: String {
        let ms = Double(nanoseconds) / 1_000_000
        return "t+\(ms)ms"
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at Int64's range (about 292 years).
    public var nanoseconds: Int64 {
        let (s, atto) = components
        let (ns, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return s < 0 ? .min : .max }
        return ns &+ atto / 1_000_000_000
    }

    /// The duration in (fractional) milliseconds, for logs and reports.
    public var milliseconds: Double { Double(nanoseconds) / 1_000_000 }
}
