import LatchkeyLock
import LatchkeyTransport

/// The lock's own filters on an arrival unlock (docs/LOCK-RULES.md rule 4). A
/// re-formed link proves nothing about distance (a relay adds ~8 ms), so even an
/// authenticated arrival request is refused when the situation says it is not needed.
public struct ArrivalPolicy: Sendable {
    /// After someone unlocked from inside, an arriving phone is most likely its owner
    /// leaving-and-returning or a relay: do not unlock again this soon. 60 s.
    public var afterManualUnlock: Duration = .seconds(60)
    /// Two phones arriving together need one unlock, not two: the second within 30 s is refused.
    public var betweenArrivals: Duration = .seconds(30)
    public init() {}

    public enum Refusal: String, Sendable, Equatable {
        case doorOpen = "door open"
        case noRemoteMode = "no-remote operating mode"
        case recentManualUnlock = "recent manual unlock"
        case recentOtherArrival = "another phone arrived moments ago"
    }

    public func check(now: Instant, doorState: DoorState, mode: OperatingMode, lastManualUnlock: Instant?,
                      lastArrival: (key: UInt32, at: Instant)?, key: UInt32) -> Refusal? {
        if doorState.isOpen { return .doorOpen }
        if mode == .noRemoteLockUnlock { return .noRemoteMode }
        if let t = lastManualUnlock, now - t < afterManualUnlock { return .recentManualUnlock }
        if let a = lastArrival, a.key != key, now - a.at < betweenArrivals { return .recentOtherArrival }
        return nil
    }
}
