import LatchkeyManagers
import LatchkeySecurity
import LatchkeyTransport

public struct PhoneAgentConfiguration: Sendable {
    public var lockAddress: BluetoothAddress
    public var keyID: UInt32
    public var secret: [UInt8]
    /// How long the link must stay down before the owner counts as away. 30 s rides out the
    /// short drops a body or a door between phone and lock cause; configurable per home.
    public var gracePeriod: Duration
    public var connectOptions: ConnectOptions
    /// The central manager's restore identifier: its request, link and attribute cache
    /// are preserved under it when the agent is given a `RestorationStorage`.
    public var restoreIdentifier: String
    /// A command with no answer by then is given up and the link dropped, so that the
    /// never-timing-out request forms a fresh one. 5 s: the lifetime of the challenge the
    /// command is sealed with (`ChallengeIssuer.defaultLifetime`), counted from the
    /// command's start (its challenge read, or its write sealed with a challenge read ahead,
    /// which dies sooner) — a later answer cannot be a success, and a request lost with a lock
    /// that died would otherwise hold the bearer for ATT's 30 s (Vol 3 Part F 3.3.3).
    public var commandTimeout: Duration
    /// A GATT setup (services, characteristics, the status subscription) not done by then
    /// is given up the same way: a request the lock never saw would otherwise block the
    /// bearer for ATT's 30 s. 10 s: a full discovery is about ten ATT round trips, under a
    /// second at the kernel's longest default connection interval (50 ms).
    public var setupTimeout: Duration
    /// An arrival request refused as busy (the bolt was moving) is asked once more when the
    /// lock reports the bolt at rest, or after this long at the latest. 6 s: the lock's jam
    /// timeout (5 s, `LockBehaviour.jamTimeout`), by which any movement has arrived or been
    /// declared a jam, plus a second for the status to cross the link (twenty connection
    /// intervals at the kernel's longest default, 50 ms).
    public var arrivalRetryWait: Duration
    /// How long an arrival intent (`arrivalIntent()`: the control socket's `arriving`, a hook
    /// standing in for a phone OS's geofence) lets a re-formed link ask for an arrival unlock.
    /// One intent allows one request. 120 s: a geofence of ~100 m fires a walk of a minute
    /// or two from the door, often late; longer leaves a relay more time to work with.
    public var arrivalIntentWindow: Duration
    /// How long the phone stays `nearby` (back, linked, no intent yet) before it counts its
    /// owner as home and the cycle as over without an arrival request (`PresenceMachine`).
    /// 120 s: the intent window's length, so a link first and a late geofence still unlock,
    /// and an intent long after the owner came in asks nothing.
    public var nearbyLimit: Duration
    /// The connection interval the phone asks the system for (the central chooses it). Each
    /// ATT round trip costs two connection events, and a returning phone's command follows
    /// the link-layer setup (two events) and three round trips, the last only half: at 7.5 ms,
    /// BLE's shortest, link → unlock line is seven events, 52.5 ms; at the kernel's 30 ms
    /// default, 210 ms (docs/ARCHITECTURE.md, "Link to unlock"). Nil: the kernel's default.
    public var connectionInterval: Duration?
    /// The interval the phone asks for once the link has idled for `idleAfter`
    /// (`LinkIntervalGovernor`); nil keeps `connectionInterval` while linked. Off by
    /// default: the kernel transport cannot update a live link yet.
    public var idleConnectionInterval: Duration?
    /// 5 s: the life of the challenge the phone reads ahead (`ChallengeIssuer.defaultLifetime`).
    public var idleAfter: Duration
    /// While the phone's store refuses writes (a full or read-only disk) the phone cannot prove
    /// itself on a link (its `present` needs a durable counter), so after a link drops it waits
    /// before linking again (`ConnectionRequest`): `storeRetryFirst`, doubling at each save that
    /// still fails, to `storeRetryLimit`. 5 s: the lock's unauthenticated link timeout, the pace
    /// of the re-links this replaces, so a disk freed at once costs one step. 5 min: a spell of
    /// hours costs about a dozen saves an hour and no link, and a disk that comes back is used
    /// within 5 min (at once when the owner taps a command).
    public var storeRetryFirst: Duration = PhoneAgentConfiguration.defaultStoreRetryFirst
    public var storeRetryLimit: Duration = PhoneAgentConfiguration.defaultStoreRetryLimit
    /// Where the commands' nonces are drawn from: the system's cryptographic generator; only
    /// the simulator and tests pass a seeded one.
    public var random: RandomSource = .system

    public static let defaultGracePeriod: Duration = .seconds(30)
    public static let defaultRestoreIdentifier = "latchkey.phone.central"

    public init(lockAddress: BluetoothAddress, keyID: UInt32, secret: [UInt8],
                gracePeriod: Duration = PhoneAgentConfiguration.defaultGracePeriod,
                connectOptions: ConnectOptions = ConnectOptions(notifyOnConnection: true, notifyOnDisconnection: true),
                restoreIdentifier: String = PhoneAgentConfiguration.defaultRestoreIdentifier,
                commandTimeout: Duration = ChallengeIssuer.defaultLifetime, setupTimeout: Duration = .seconds(10),
                arrivalRetryWait: Duration = .seconds(6),
                arrivalIntentWindow: Duration = PhoneAgentConfiguration.defaultArrivalIntentWindow,
                nearbyLimit: Duration = PhoneAgentConfiguration.defaultNearbyLimit,
                connectionInterval: Duration? = PhoneAgentConfiguration.defaultConnectionInterval,
                idleConnectionInterval: Duration? = nil, idleAfter: Duration = ChallengeIssuer.defaultLifetime) {
        self.lockAddress = lockAddress; self.keyID = keyID; self.secret = secret
        self.gracePeriod = gracePeriod; self.connectOptions = connectOptions
        self.restoreIdentifier = restoreIdentifier; self.commandTimeout = commandTimeout
        self.setupTimeout = setupTimeout; self.arrivalRetryWait = arrivalRetryWait
        self.arrivalIntentWindow = arrivalIntentWindow
        self.nearbyLimit = nearbyLimit
        self.connectionInterval = connectionInterval
        self.idleConnectionInterval = idleConnectionInterval; self.idleAfter = idleAfter
    }

    public static let defaultStoreRetryFirst: Duration = .seconds(5)
    public static let defaultStoreRetryLimit: Duration = .seconds(300)
    public static let defaultArrivalIntentWindow: Duration = .seconds(120)
    public static let defaultNearbyLimit: Duration = .seconds(120)
    /// 7.5 ms: the shortest the Core spec allows (Vol 6 Part B 4.5.1).
    public static let defaultConnectionInterval: Duration? = .microseconds(7_500)
}
