#if canImport(Glibc)
import Glibc
#endif

/// The wall clock the store stamps rows with: nanoseconds since the Unix epoch
/// (CLOCK_REALTIME). Injected so that tests move it by hand instead of sleeping.
///
/// Unlike the event loop's monotonic `Instant`s, wall time means the same thing in the next
/// process and after a reboot — which is why the decision journal needs it (see
/// `DecisionDeadlineRule`). It can also jump (NTP, a Pi without a real-time clock booting
/// with a stale time), and the rules that use it say what they do when it does.
public struct WallClock {
    public let nanosecondsSinceEpoch: () -> Int64

    public init(nanosecondsSinceEpoch: @escaping () -> Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    /// clock_gettime(CLOCK_REALTIME).
    public static var system: WallClock {
        WallClock {
            var spec = timespec()
            clock_gettime(CLOCK_REALTIME, &spec)
            return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
        }
    }
}
