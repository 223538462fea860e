import LatchkeyLock
import LatchkeyTransport

/// The lock's own filters on an arrival unlock (docs/LOCK-RULES.md rule 4). A
/// re-formed link proves nothing about distance (a relay adds ~8 ms), so even an
/// authenticated arrival request is refused when the situation says it is not needed, or
/// when its timing says a relay may be carrying it (docs/SECURITY.md, "Arrival unlock").
public struct ArrivalPolicy: Sendable {
    /// After someone unlocked from inside, an arriving phone is most likely its owner
    /// leaving-and-returning or a relay: do not unlock again this soon. 60 s.
    public var afterManualUnlock: Duration = .seconds(60)
    /// Two phones arriving together need one unlock, not two: the second within 30 s is refused.
    public var betweenArrivals: Duration = .seconds(30)
    /// The longest time from the challenge read to the arrival command's write on the same
    /// link. In milliseconds, not connection intervals: the central (a relay, perhaps)
    /// picks the interval. 150 ms: docs/SECURITY.md, "Arrival unlock", gives the measured
    /// figures (a phone at the kernel's parameters takes two intervals, 60 ms; three at the
    /// ceiling are 150 ms, so an honest phone always fits and a relay has nothing to spare).
    public var challengeToCommandLimit: Duration = .milliseconds(150)
    /// The longest connection interval on which an arrival is accepted. 50 ms: the kernel's
    /// longest default (a Linux central that sets nothing asks for 30–50 ms); our phone asks
    /// for 7.5 ms. A longer one would let a relay hide its latency inside the limit above.
    /// The lock accepts any interval as a link (`SystemConfiguration.peripheral`): this
    /// ceiling, read from the link's own HCI events, is its only limit on it.
    public var connectionIntervalCeiling: Duration = .milliseconds(50)
    /// After an arrival unlock, the lock locks again if the door has not been opened by
    /// then (nil: never). 30 s: the walk from the gate to the handle, with a margin.
    public var relockUnlessOpenedWithin: Duration? = .seconds(30)
    /// A departure the lock saw allows one arrival only until this long after the key's first
    /// authenticated command since (its phone's `present` on the re-formed link, typically):
    /// the owner who came back and did not ask is home, and the credit must not wait for
    /// hours for whoever can raise an intent on their phone. 120 s: the phone's own intent
    /// window, so a link first and an intent within the window still unlock.
    public var departureCreditAfterReturn: Duration = .seconds(120)
    public init() {}

    public enum Refusal: String, Sendable, Equatable {
        case doorOpen = "door open"
        case noRemoteMode = "no-remote operating mode"
        case recentManualUnlock = "recent manual unlock"
        case recentOtherArrival = "another phone arrived moments ago"
        case noDepartureSeen = "no departure seen since the last arrival"
        case returnedLongAgo = "the phone came back too long ago"
        case suspectedRelay = "suspected relay"
    }

    public func check(now: Instant, doorState: DoorState, mode: OperatingMode, lastManualUnlock: Instant?,
                      lastArrival: (key: UInt32, at: Instant)?, key: UInt32) -> Refusal? {
        if doorState.isOpen { return .doorOpen }
        if mode == .noRemoteLockUnlock { return .noRemoteMode }
        if let t = lastManualUnlock, now - t < afterManualUnlock { return .recentManualUnlock }
        if let a = lastArrival, a.key != key, now - a.at < betweenArrivals { return .recentOtherArrival }
        return nil
    }

    /// Why the command's timing points at a relay; nil when it fits the bounds.
    /// `elapsed`: challenge read → command write on the link (nil: no challenge was read on
    /// it, which the verifier has refused already); `interval`: the link's, nil if unknown.
    public func relaySuspicion(elapsed: Duration, interval: Duration?) -> SuspectedRelayRecord.Reason? {
        guard let interval else { return .intervalUnknown }
        if interval > connectionIntervalCeiling { return .intervalAboveCeiling }
        if elapsed > challengeToCommandLimit { return .tooSlow }
        return nil
    }
}
