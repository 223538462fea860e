import LatchkeyAgents
import LatchkeyConfig
import LatchkeyControl
import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyPosix
import LatchkeySecurity
import LatchkeySimAir
import LatchkeyTransport

/// Everything `latchkey lock` reads from its configuration file (documented field by field
/// in docs/CONFIGURATION.md). Every field has a default except the transport's address.
public struct LockSettings: Sendable {
    public var transport: TransportSettings
    public var stateDirectory: String
    public var agent: LockAgentConfiguration
    public var behaviour: LockBehaviour
    public var wiring: LockWiring
    /// Where file-backed simulated GPIO chips live (gpio-sim-like directories), for `sim`.
    public var simulatedGPIORoot: String?
    public var eventFormat: EventFormat
    /// Execution mode, suspension queue, wake budget, alert hook (ExecutionSettings).
    public var execution = ExecutionSettings()
    /// `bridge_user`: the one user besides the agent's and root that reaches the control
    /// socket, with only the MQTT bridge's commands (`.owner`: none).
    public var controlSocketAccess = ControlSocketAccess.owner
    /// `bridge_key_id`: the key the MQTT bridge's `bridge lock|unlock` acts as (nil: none).
    public var bridgeKeyID: UInt32?
    /// Where `bridge_key_id` was given (file, line, field), for the error when the key it
    /// names cannot act for the bridge (`BridgeKeyRule`, checked against the store at start).
    public var bridgeKeySite: ConfigError?
    /// The board definition the wiring came from (`board:` or `--board`), if any.
    public var board: BoardDefinition?
    /// `lock.realtime_priority`: the SCHED_FIFO priority `latchkey lock` asks for its event
    /// loop at start (nil: `0`, stay under the normal policy). A command preempted by ordinary
    /// work waits a scheduler tick or more (CHANGELOG.md, "Under load, and the table in one command").
    public var realtimePriority: Int? = LockSettings.defaultRealtimePriority
    public static let defaultRealtimePriority = 10
    /// `lock.log_retention_events`: how many events the audit log keeps (nil: the store's
    /// default, `StoredEventLog.defaultRetention`).
    public var logRetention: Int?

    /// `board` (the CLI's `--board`) wins over the file's `board:` field; either loads
    /// `board/<name>.yaml` from `boards`, whose `gpio:` fields the file's own override.
    public static func load(_ file: ConfigFile, board boardOverride: String? = nil,
                            boards: BoardCatalog = .standard()) throws(ConfigError) -> LockSettings {
        let root = file.root
        let named = try root.string("board")
        let loaded = try (boardOverride ?? named).map { name throws(ConfigError) in try boards.load(name) }
        let board = loaded?.0
        let transport = try TransportSettings.read(root, defaultAirSocket: AirDefaults.socketPath)
        let state = try root.string("state_directory", default: "/var/lib/latchkey/lock")
        var agent = LockAgentConfiguration()
        agent.name = try root.string("name", default: agent.name)
        guard agent.name.utf8.count <= 29 else {
            throw root.invalid("name", "at most 29 bytes fit in advertising data")
        }
        var behaviour = LockBehaviour()
        var realtimePriority: Int? = defaultRealtimePriority
        var logRetention: Int?
        if let jam = board?.jamTimeout { behaviour.jamTimeout = jam }
        if let lock = try root.table("lock") {
            if let s = try lock.seconds("auto_relock_seconds", in: 0...86_400) { behaviour.autoRelockTime = s == .zero ? nil : s }
            if let s = try lock.seconds("jam_timeout_seconds", in: 0.1...60) { behaviour.jamTimeout = s }
            if let s = try lock.seconds("departure_grace_seconds", in: 1...86_400) { agent.departureGrace = s }
            if let s = try lock.seconds("challenge_lifetime_seconds", in: 0.5...60) { agent.challengeLifetime = s }
            if let s = try lock.seconds("advertising_interval_seconds", in: 0.02...10.24) { agent.advertisingInterval = s }
            if let b = try lock.choice("button_action", ["toggle", "unlock", "lock"]) {
                behaviour.buttonAction = b == "toggle" ? .toggle : b == "unlock" ? .unlock : .lock
            }
            if let s = try lock.seconds("arrival_after_manual_unlock_seconds", in: 0...3600) { agent.arrivalPolicy.afterManualUnlock = s }
            if let s = try lock.seconds("arrival_spacing_seconds", in: 0...3600) { agent.arrivalPolicy.betweenArrivals = s }
            if let s = try lock.seconds("arrival_after_return_seconds", in: 1...3600) {
                agent.arrivalPolicy.departureCreditAfterReturn = s
            }
            if let ms = try lock.milliseconds("arrival_response_limit_ms", in: 10...5000) {
                agent.arrivalPolicy.challengeToCommandLimit = ms
            }
            if let ms = try lock.milliseconds("arrival_interval_ceiling_ms", in: 7.5...4000) {
                agent.arrivalPolicy.connectionIntervalCeiling = ms
            }
            if let s = try lock.seconds("arrival_relock_unless_opened_seconds", in: 0...3600) {
                agent.arrivalPolicy.relockUnlessOpenedWithin = s == .zero ? nil : s
            }
            // Matter WrongCodeEntryLimit / UserCodeTemporaryDisableTime ranges (1–255).
            if let n = try lock.integer("wrong_code_entry_limit", in: 1...255) { agent.lockout.perKeyLimit = UInt32(n) }
            if let n = try lock.integer("overall_wrong_code_limit", in: 1...10_000) { agent.lockout.overallLimit = UInt32(n) }
            if let s = try lock.seconds("user_code_temporary_disable_seconds", in: 1...255) { agent.lockout.disableTime = s }
            if let s = try lock.seconds("maximum_disable_seconds", in: 1...86_400) { agent.lockout.maximumDisableTime = s }
            // Strangers (docs/SECURITY.md, "Strangers"): a phone needs about 100 ms.
            if let s = try lock.seconds("unauthenticated_link_seconds", in: 0.5...60) { agent.unauthenticatedLinkTimeout = s }
            if let n = try lock.integer("unauthenticated_frames_per_link", in: 1...100) { agent.unauthenticatedFrameLimit = n }
            if let n = try lock.integer("maximum_links", in: 1...16) { agent.maximumLinks = n }
            if let n = try lock.integer("realtime_priority", in: 0...CPUScheduling.fifoPriorities.upperBound) {
                realtimePriority = n == 0 ? nil : n
            }
            logRetention = try lock.integer("log_retention_events", in: 1...10_000_000)
            try lock.finish()
        }
        let own = try root.table("gpio")
        guard let gpio = loaded.map({ own?.overlaying($0.gpio) ?? $0.gpio }) ?? own else {
            throw ConfigError(file: file.path, line: nil, field: "gpio",
                              message: "is required (the lock's wiring), or name a board with `board:` or --board")
        }
        var wiring = try readWiring(gpio)
        // The board's LED unless the file wires its own (`gpio.status_led_line`).
        if wiring.statusLED == nil, let led = board?.statusLEDLine { wiring.statusLED = LockWiring.Output(led) }
        let simRoot = try gpio.string("simulated_chip_root")
        try gpio.finish()
        if let board { try checkLines(wiring, on: board, gpio: gpio) }
        let format = try root.choice("event_format", ["text", "json"]).flatMap(EventFormat.init(rawValue:)) ?? .text
        let execution = try ExecutionSettings.read(root)
        let access = try ControlSocketAccess.read(root)
        let bridgeKey = try root.integer("bridge_key_id", in: 1...Int(UInt32.max)).map(UInt32.init)
        try root.finish()
        var settings = LockSettings(transport: transport, stateDirectory: state, agent: agent, behaviour: behaviour,
                                    wiring: wiring, simulatedGPIORoot: simRoot, eventFormat: format,
                                    execution: execution, board: board)
        settings.controlSocketAccess = access
        settings.bridgeKeyID = bridgeKey
        settings.bridgeKeySite = bridgeKey.map { root.invalid("bridge_key_id", "key \($0)") }
        settings.realtimePriority = realtimePriority
        settings.logRetention = logRetention
        return settings
    }

    /// Every wired line must be one the board offers; the error lists them, at the file and
    /// line that wired it (the lock configuration or the board file).
    package static func checkLines(_ wiring: LockWiring, on board: BoardDefinition, gpio: ConfigTable) throws(ConfigError) {
        guard !board.lines.isEmpty else { return }
        for (field, line) in wiring.namedLines where !board.lines.contains(line) {
            throw gpio.invalid(field, "'\(line)' is not a line of board \(board.name); its lines: "
                                   + board.lines.joined(separator: " "))
        }
    }

    package static func readWiring(_ gpio: ConfigTable) throws(ConfigError) -> LockWiring {
        let chip = try gpio.required("chip")
        let kind = try gpio.choice("actuator", ["hold", "pulse", "motor"]) ?? "hold"
        let actuator: ActuatorKind
        switch kind {
        case "pulse": actuator = .pulse(try gpio.milliseconds("pulse_ms", in: 10...10_000) ?? .milliseconds(500))
        case "motor": actuator = .motor(runTime: try gpio.milliseconds("motor_run_ms", in: 10...30_000) ?? .seconds(1))
        default: actuator = .hold
        }
        // `door_line: door` goes with `door_active_low:` and `door_bias:`.
        func base(_ key: String) -> String { String(key.dropLast("_line".count)) }
        func output(_ key: String) throws(ConfigError) -> LockWiring.Output? {
            guard let line = try gpio.string(key) else { return nil }
            return LockWiring.Output(line, activeLow: try gpio.bool(base(key) + "_active_low") ?? false)
        }
        func input(_ key: String) throws(ConfigError) -> LockWiring.Input? {
            guard let line = try gpio.string(key) else { return nil }
            let bias = try gpio.choice(base(key) + "_bias", ["as-is", "disabled", "pull-up", "pull-down"]) ?? "as-is"
            return LockWiring.Input(line, activeLow: try gpio.bool(base(key) + "_active_low") ?? false,
                                    bias: ["disabled": .disabled, "pull-up": .pullUp, "pull-down": .pullDown][bias] ?? .asIs)
        }
        guard let unlock = try output("unlock_line") else {
            throw gpio.invalid("unlock_line", "is required")
        }
        let lockLine = try output("lock_line")
        if kind == "motor" && lockLine == nil {
            throw gpio.invalid("lock_line", "is required for a motor actuator")
        }
        var wiring = LockWiring(chipLabel: chip, actuator: actuator, unlockOutput: unlock, lockOutput: lockLine,
                                maximumEnergizeTime: try gpio.milliseconds("maximum_energize_ms", in: 10...600_000),
                                door: try input("door_line"), button: try input("button_line"),
                                boltLocked: try input("bolt_locked_line"), boltUnlocked: try input("bolt_unlocked_line"),
                                statusLED: try output("status_led_line"))
        if let d = try gpio.milliseconds("debounce_ms", in: 0...1000) { wiring.debounce = d }
        return wiring
    }
}

/// How an agent prints its timeline events on standard output.
public enum EventFormat: String, Sendable {
    /// `12.345 lock.command_accepted key=1 op=unlock`
    case text
    /// One JSON object per line.
    case json
}

public enum AirDefaults {
    /// Where `latchkey air` listens unless told otherwise.
    public static var socketPath: String { AirServer.defaultSocketPath }
}
