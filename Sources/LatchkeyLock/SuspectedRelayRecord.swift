import LatchkeyTransport

/// An authenticated arrival unlock the lock refused because its timing points at a relay
/// (docs/SECURITY.md, "Arrival unlock"): the audit log keeps the figures that were measured,
/// so the owner sees what was tried and how far outside the bounds it was. Our addition to
/// Matter's events (kind 6 in the binary form).
public struct SuspectedRelayRecord: Hashable, Sendable, CustomStringConvertible {
    public enum Reason: UInt8, Hashable, Sendable, CaseIterable {
        /// The command came later after its challenge than the configured limit.
        case tooSlow = 0
        /// The link's connection interval is above the configured ceiling.
        case intervalAboveCeiling = 1
        /// The transport does not know the link's connection interval.
        case intervalUnknown = 2
    }

    public var reason: Reason
    public var who: KeyID
    /// Challenge read → command write on the link, in microseconds (saturating).
    public var elapsedMicroseconds: UInt32
    /// The link's connection interval in microseconds; nil when unknown.
    public var intervalMicroseconds: UInt32?

    public init(_ reason: Reason, who: KeyID, elapsed: Duration, interval: Duration?) {
        self.reason = reason
        self.who = who
        elapsedMicroseconds = Self.microseconds(elapsed)
        intervalMicroseconds = interval.map(Self.microseconds)
    }

    public init(_ reason: Reason, who: KeyID, elapsedMicroseconds: UInt32, intervalMicroseconds: UInt32?) {
        self.reason = reason
        self.who = who
        self.elapsedMicroseconds = elapsedMicroseconds
        self.intervalMicroseconds = intervalMicroseconds
    }

    /// 0xFFFFFFFF stands for "unknown" in the binary form, so a known figure stops below it.
    static func microseconds(_ d: Duration) -> UInt32 {
        UInt32(clamping: min(Int64(UInt32.max - 1), max(0, d.nanoseconds / 1_000)))
    }

    public var description: String {
        let interval = intervalMicroseconds.map { "\(Double($0) / 1000) ms" } ?? "unknown"
        return "\(reason) key \(who.rawValue): challenge→command \(Double(elapsedMicroseconds) / 1000) ms, interval \(interval)"
    }
}
