import LatchkeyConfig
import LatchkeyManagers
import LatchkeyTransport

/// The `execution:` table of either agent's configuration (docs/CONFIGURATION.md).
public struct ExecutionSettings: Sendable, Equatable {
    /// The role's execution mode at start; `execution foreground|background` on the control socket changes it later.
    public var mode: ExecutionMode = .foreground
    /// Events a suspension can hold before the overflow is reported.
    public var queueCapacity = ApplicationGate.defaultCapacity
    public var wakeBudget = ApplicationGate.defaultWakeBudget
    /// Command run (via /bin/sh -c) for each connection alert (phone) or each jam, lockout
    /// and forced door (lock); nil: logged only.
    public var alertHook: String?
    /// Lock only: Apple's fast-then-slow advertising schedule (20 ms for 30 s after a
    /// start or a disconnection, then the configured interval). false: the interval only.
    public var fastAdvertising = true

    public init() {}

    package static func read(_ root: ConfigTable) throws(ConfigError) -> ExecutionSettings {
        var s = ExecutionSettings()
        guard let t = try root.table("execution") else { return s }
        if let m = try t.choice("mode", ExecutionMode.allCases.map(\.rawValue)) { s.mode = ExecutionMode(rawValue: m)! }
        if let n = try t.integer("queue_capacity", in: 1...1_000_000) { s.queueCapacity = n }
        if let b = try t.seconds("wake_budget_seconds", in: 0.1...3_600) { s.wakeBudget = b }
        s.alertHook = try t.string("alert_hook")
        if let f = try t.bool("fast_advertising") { s.fastAdvertising = f }
        try t.finish()
        return s
    }
}
