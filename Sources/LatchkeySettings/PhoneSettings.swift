import LatchkeyAgents
import LatchkeyConfig
import LatchkeyControl
import LatchkeyManagers
import LatchkeyPhoneAgent
import LatchkeyTransport

/// Everything `latchkey phone` reads from its configuration file.
public struct PhoneSettings: Sendable {
    public var transport: TransportSettings
    public var stateDirectory: String
    /// Nil: the lock's address is in the paired-key file (`latchkey phone pair` found the
    /// lock by a scan and wrote it there).
    public var lockAddress: BluetoothAddress?
    /// Nil: the key id is in `keySecretFile`, a paired-key file (`latchkey phone pair`).
    public var keyID: UInt32?
    /// A file holding the 32-octet key as 64 hex digits (mode 0600), or the paired-key file
    /// `latchkey phone pair` wrote (the default, `<state_directory>/paired.key`).
    public var keySecretFile: String
    public var gracePeriod: Duration
    /// How long an arrival intent (`phone-ctl arriving`) lets a re-link ask for an arrival unlock.
    public var arrivalIntentWindow = PhoneAgentConfiguration.defaultArrivalIntentWindow
    /// How long a returned phone stays `nearby` before it counts its owner as home.
    public var nearbyLimit = PhoneAgentConfiguration.defaultNearbyLimit
    /// The connection interval the phone asks for (`connection_interval_ms`, 7.5–4000).
    public var connectionInterval = PhoneAgentConfiguration.defaultConnectionInterval
    /// The interval an idle link is moved to (`idle_connection_interval_ms`, 7.5–4000); nil: none.
    public var idleConnectionInterval: Duration?
    public var connectOptions: ConnectOptions
    public var eventFormat: EventFormat
    /// Execution mode, suspension queue, wake budget, alert hook (ExecutionSettings).
    public var execution = ExecutionSettings()
    /// `bridge_user`: the one user besides the agent's and root that reaches the control
    /// socket, with only the MQTT bridge's commands (`.owner`: none).
    public var controlSocketAccess = ControlSocketAccess.owner

    public static func load(_ file: ConfigFile) throws(ConfigError) -> PhoneSettings {
        let root = file.root
        let transport = try TransportSettings.read(root, defaultAirSocket: AirDefaults.socketPath)
        let state = try root.string("state_directory", default: "/var/lib/latchkey/phone")
        let lock = try root.parsed("lock_address", expected: "an address like C0:FF:EE:00:00:01",
                                   { BluetoothAddress(string: $0) })
        let keyID = try root.integer("key_id", in: 1...Int(UInt32.max))
        let secretFile = try root.string("key_secret_file")
        if keyID != nil && lock == nil {
            throw ConfigError(file: file.path, line: nil, field: "lock_address",
                              message: "is required with key_id (or leave both out to use `latchkey phone pair`)")
        }
        if keyID != nil && secretFile == nil {
            throw ConfigError(file: file.path, line: nil, field: "key_secret_file",
                              message: "is required with key_id (or leave both out to use `latchkey phone pair`)")
        }
        let grace = try root.seconds("grace_seconds", in: 1...86_400) ?? PhoneAgentConfiguration.defaultGracePeriod
        let intentWindow = try root.seconds("arrival_intent_window_seconds", in: 1...600)
            ?? PhoneAgentConfiguration.defaultArrivalIntentWindow
        let nearbyLimit = try root.seconds("nearby_seconds", in: 1...3600) ?? PhoneAgentConfiguration.defaultNearbyLimit
        // Core Vol 6 Part B 4.5.1: 7.5 ms to 4 s, in steps of 1.25 ms (mgmt rounds to the nearest).
        let interval = try root.milliseconds("connection_interval_ms", in: 7.5...4000)
        let idleInterval = try root.milliseconds("idle_connection_interval_ms", in: 7.5...4000)
        var options = ConnectOptions(notifyOnConnection: true, notifyOnDisconnection: true)
        if let alerts = try root.table("alerts") {
            options.notifyOnConnection = try alerts.bool("on_connection") ?? options.notifyOnConnection
            options.notifyOnDisconnection = try alerts.bool("on_disconnection") ?? options.notifyOnDisconnection
            options.notifyOnNotification = try alerts.bool("on_notification") ?? options.notifyOnNotification
            try alerts.finish()
        }
        let format = try root.choice("event_format", ["text", "json"]).flatMap(EventFormat.init(rawValue:)) ?? .text
        let execution = try ExecutionSettings.read(root)
        let access = try ControlSocketAccess.read(root)
        try root.finish()
        var settings = PhoneSettings(transport: transport, stateDirectory: state, lockAddress: lock,
                                     keyID: keyID.map(UInt32.init),
                                     keySecretFile: secretFile ?? state + "/" + PairedKeyFile.fileName, gracePeriod: grace,
                                     connectOptions: options, eventFormat: format, execution: execution)
        settings.arrivalIntentWindow = intentWindow
        settings.nearbyLimit = nearbyLimit
        if let interval { settings.connectionInterval = interval }
        settings.idleConnectionInterval = idleInterval
        settings.controlSocketAccess = access
        return settings
    }
}
