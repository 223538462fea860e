/// The multi-step jobs an agent keeps going after the callback that started them returned, by
/// name (Core Bluetooth's `beginBackgroundTask` / `endBackgroundTask`): while one is open the
/// application gate counts its wake-up as still handled, so the wake budget measures the whole
/// job. Outside a wake-up `begin` does nothing; beginning an open task or ending a closed one
/// does nothing either, so callers mark each step without bookkeeping of their own.
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
