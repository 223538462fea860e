import LatchkeyManagers
import LatchkeyTransport

/// What a peripheral manager remembers about its execution mode and advertising schedule.
struct PeripheralBackgroundState {
    var mode: ExecutionMode = .foreground
    /// Foreground timing; nil advertises at the interval the app asked for.
    var schedule: AdvertisingSchedule?
    var backgroundSchedule = AdvertisingSchedule.background
    var fastSince: Instant?
    var phaseTimer: Scheduled?
    /// Set while a foreground-only application layer is suspended: nothing goes on air.
    var suppressed = false
}

/// Execution modes for the peripheral role. In background mode the local name is
/// left out of the advertising data and the scan response, and the advertising schedule is
/// `backgroundAdvertisingSchedule` (slower). Both modes follow a fast-then-slow schedule
/// that restarts when advertising starts and when a central disconnects.
extension PeripheralManager {
    public var executionMode: ExecutionMode { background.mode }

    /// Switches the mode; what is on air is replaced at once and the schedule starts over
    /// with its fast phase (as after a start).
    public func setExecutionMode(_ mode: ExecutionMode) {
        background.mode = mode
        if advertisement != nil { beginFastAdvertising() } else { reapplyAdvertising() }
    }

    /// The foreground schedule (default nil: the app's own interval, unchanged).
    public var advertisingSchedule: AdvertisingSchedule? {
        get { background.schedule }
        set { background.schedule = newValue; if advertisement != nil { beginFastAdvertising() } }
    }

    public var backgroundAdvertisingSchedule: AdvertisingSchedule {
        get { background.backgroundSchedule }
        set { background.backgroundSchedule = newValue; if advertisement != nil { beginFastAdvertising() } }
    }

    /// Whether the application layer's suspension keeps us off the air.
    public var isAdvertisingSuppressed: Bool { background.suppressed }

    /// Stops advertising without forgetting what the app asked for (a suspended
    /// foreground-only app does not advertise), or puts it back.
    public func setAdvertisingSuppressed(_ suppressed: Bool) {
        guard background.suppressed != suppressed else { return }
        background.suppressed = suppressed
        if suppressed {
            transport.stopAdvertising()
        } else {
            beginFastAdvertising()
            rearmAdvertising()
        }
    }

    /// What goes on air for `advertisement` in the current mode and schedule phase.
    public func advertisingForMode(_ advertisement: Advertisement) -> Advertisement {
        var out = advertisement
        let now = transport.loop.now
        switch background.mode {
        case .foreground:
            if let schedule = background.schedule {
                out.interval = schedule.interval(at: now, fastSince: background.fastSince ?? now)
            }
        case .background:
            out.data.localName = nil
            out.scanResponse?.localName = nil
            out.interval = background.backgroundSchedule.interval(at: now, fastSince: background.fastSince ?? now)
        }
        return out
    }

    /// Restarts the fast phase (advertising started, or a central disconnected) and arms
    /// the switch to the slow interval at its end; `reapply` puts the fast timing on air.
    func beginFastAdvertising(reapply: Bool = true) {
        let now = transport.loop.now
        background.fastSince = now
        background.phaseTimer?.cancel()
        let period = background.mode == .background ? background.backgroundSchedule.fastPeriod
            : (background.schedule?.fastPeriod ?? .zero)
        if reapply { reapplyAdvertising() }
        guard period > .zero else { background.phaseTimer = nil; return }
        background.phaseTimer = transport.loop.schedule(at: now + period) { [weak self] in
            self?.background.phaseTimer = nil
            self?.reapplyAdvertising()
        }
    }

    func endAdvertisingSchedule() {
        background.phaseTimer?.cancel()
        background.phaseTimer = nil
        background.fastSince = nil
    }

    /// Replaces what is on air with what the mode and phase call for now. Only while on
    /// air: a connected legacy advertiser is re-armed later through `rearmAdvertising`.
    private func reapplyAdvertising() {
        guard let advertisement, transport.isAdvertising, !background.suppressed else { return }
        advertiseAgain(advertisingForMode(advertisement))
    }
}
