import LatchkeyTransport

/// A duty-cycled receiver: a scan with interval I and window W listens during
/// [start + k·I, start + k·I + W) for every k ≥ 0 (Core Vol 6 Part B 4.4.3, scanning state).
///
/// Windows are computed, never scheduled: a receiver that hears nothing costs no timer,
/// which is what lets a pending connection wait for 30 simulated days for free.
struct ListeningWindow {
    let start: Instant
    let interval: Duration
    let window: Duration

    func isOpen(at t: Instant) -> Bool {
        guard t >= start else { return false }
        let phase = (t - start).nanoseconds % interval.nanoseconds
        return phase < window.nanoseconds
    }
}

/// Parameter ranges the controller enforces, so the simulation refuses what a real
/// controller refuses.
enum RadioLimits {
    /// LE Set Scan Parameters: interval and window 0x0004–0x4000 × 0.625 ms, window ≤ interval
    /// (Core Vol 4 Part E 7.8.10).
    static let scanTiming = Duration.microseconds(2_500)...Duration.milliseconds(10_240)
    /// Legacy advertising interval 20 ms–10.24 s (Core Vol 6 Part B 4.4.2.2.1).
    static let advertisingInterval = Duration.milliseconds(20)...Duration.milliseconds(10_240)
    /// connInterval 7.5 ms–4 s (Core Vol 6 Part B 4.5.1).
    static let connectionInterval = Duration.microseconds(7_500)...Duration.seconds(4)
    /// connSupervisionTimeout 100 ms–32 s, and more than twice the connection interval
    /// with zero peripheral latency (Core Vol 6 Part B 4.5.2).
    static let supervisionTimeout = Duration.milliseconds(100)...Duration.seconds(32)

    static func check(scanInterval: Duration, window: Duration) throws(TransportError) {
        guard scanTiming.contains(scanInterval), scanTiming.contains(window), window <= scanInterval else {
            throw TransportError(.invalidParameters,
                                 "scan interval \(scanInterval) / window \(window) outside Core Vol 4 Part E 7.8.10")
        }
    }
}
