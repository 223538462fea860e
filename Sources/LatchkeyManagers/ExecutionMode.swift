import LatchkeyTransport

/// Core Bluetooth's execution modes, one per role. `foreground` is an app without a
/// Bluetooth background mode: suspended, it hears nothing until it comes back. `background`
/// declares the role's background mode (`bluetooth-central` / `bluetooth-peripheral`): the
/// system wakes the app for its events, at the price of less radio time.
public enum ExecutionMode: String, Sendable, CaseIterable {
    case foreground, background
}

/// Radio timing a central uses in background mode.
public enum BackgroundScanTiming {
    /// 1.28 s interval with an 11.25 ms window: Android's background connect scan
    /// (docs/LINUX-BLE.md, "Numbers worth knowing"), the same duty-cycle class iOS uses for a
    /// backgrounded central. Against the kernel default 60/30 ms it is ~1/57 of the radio time.
    public static let interval: Duration = .milliseconds(1_280)
    public static let window: Duration = .microseconds(11_250)

    /// The timing of the system's own auto-connect scan for `mode` (mgmt Set Default System
    /// Configuration on Linux). Connection timing stays the kernel default.
    public static func connectionParameters(for mode: ExecutionMode) -> ConnectionParameters {
        switch mode {
        case .foreground: return .kernelDefault
        case .background:
            var p = ConnectionParameters.kernelDefault
            p.scanInterval = interval
            p.scanWindow = window
            return p
        }
    }

    /// Foreground explicit scan timing: the kernel's discovery default, 60/30 ms
    /// (net/bluetooth/hci_core.c), what CentralManager always used.
    public static let foregroundInterval: Duration = .milliseconds(60)
    public static let foregroundWindow: Duration = .milliseconds(30)
}

/// When to advertise fast and when slowly (Apple Accessory Design Guidelines, "Advertising
/// interval"): 20 ms for the first 30 s after advertising starts or a central disconnects,
/// then one of the recommended slow intervals.
public struct AdvertisingSchedule: Hashable, Sendable {
    public var fastInterval: Duration
    public var fastPeriod: Duration
    public var slowInterval: Duration

    /// The slow intervals Apple's guidance lists (ms): each is chosen so iOS's scan windows
    /// find the accessory quickly despite advDelay.
    public static let recommendedSlowIntervals: [Duration] = [
        152_500, 211_250, 318_750, 417_500, 546_250, 760_000, 852_500, 1_022_500, 1_285_000,
    ].map { Duration.microseconds($0) }

    public init(fastInterval: Duration = .milliseconds(20), fastPeriod: Duration = .seconds(30),
                slowInterval: Duration = AdvertisingSchedule.recommendedSlowIntervals[0]) {
        self.fastInterval = fastInterval; self.fastPeriod = fastPeriod; self.slowInterval = slowInterval
    }

    /// Foreground default: 20 ms for 30 s, then 152.5 ms (the first recommended interval).
    public static let accessoryGuidance = AdvertisingSchedule()
    /// Background default: "slower advertising". Every phase steps down the guidance
    /// list: 152.5 ms while fast, 1022.5 ms after, about a seventh of the foreground airtime.
    public static let background = AdvertisingSchedule(fastInterval: recommendedSlowIntervals[0],
                                                       slowInterval: recommendedSlowIntervals[7])

    /// The interval in force at `now` for a fast phase that began at `fastSince`.
    public func interval(at now: Instant, fastSince: Instant) -> Duration {
        now - fastSince < fastPeriod ? fastInterval : slowInterval
    }
}
