/// The multi-step jobs an agent keeps going after the callback that started them returned,
/// by name: Core Bluetooth apps bracket such work with `beginBackgroundTask` /
/// `endBackgroundTask`. While one is open, the application gate counts the wake-up that
/// started it as still being handled, so the wake budget measures the whole job — a
/// GATT exchange, a command and its answer, the actuator's movement — not just the first
/// callback.
///
/// Outside a wake-up (the app is in the foreground, or no gate is attached) `begin` does
/// nothing: there is nothing to measure. Beginning an open task again, or ending one that
/// is not open, does nothing either, so callers mark each step's start and end without
/// bookkeeping of their own.
public final class BackgroundTasks {
    /// The gate whose wake-ups these tasks extend; set by whoever puts the agent behind one.
    public weak var gate: ApplicationGate?
    private var open: [String: ApplicationGate.BackgroundWork] = [:]

    public init() {}

    /// The tasks holding the current wake-up open.
    public var openTasks: Set<String> { Set(open.keys) }

    public func begin(_ name: String) {
        guard open[name] == nil, let gate else { return }
        let work = gate.beginBackgroundWork()
        if !work.isEnded { open[name] = work }
    }

    public func end(_ name: String) {
        open.removeValue(forKey: name)?.end()
    }
}
