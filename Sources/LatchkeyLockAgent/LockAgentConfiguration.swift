import LatchkeyAgents
import LatchkeyGATT
import LatchkeySecurity

public struct LockAgentConfiguration: Sendable {
    /// The lock's name: its advertised local name and its Generic Access Device Name.
    public var name: String
    /// 152.5 ms: the first of Apple's recommended slow advertising intervals (accessory
    /// design guidelines), quick enough for a returning phone to re-link within a second.
    public var advertisingInterval: Duration
    /// How long a phone that authenticated may stay gone before the lock locks behind its
    /// owner. Matches the phone's own grace period by default.
    public var departureGrace: Duration
    public var challengeLifetime: Duration
    public var arrivalPolicy: ArrivalPolicy
    /// Failed-attempt limits and disable times (docs/SECURITY.md, "Lockout").
    public var lockout: LockoutPolicy
    /// The peripheral manager's restore identifier: advertising, the service's handles
    /// and the subscribed centrals are preserved under it when the agent has a storage.
    public var restoreIdentifier: String
    /// The service this version publishes. A relaunch that finds another one preserved
    /// replaces it, and phones on links that survived are sent Service Changed.
    public var serviceDefinition: GATTService
    /// A link that has not proven a key by then (a session, or a pairing) is dropped, so an
    /// idle stranger cannot hold the lock's attention. A phone needs about 100 ms.
    public var unauthenticatedLinkTimeout: Duration
    /// Frames failing before their tag (malformed, stale challenge, forged) a link may send;
    /// the one that reaches the limit drops the link. They never count against a key.
    public var unauthenticatedFrameLimit: Int
    /// Links the lock takes at once: it keeps advertising while fewer are up (where the
    /// controller can advertise beside a link), so one linked central never hides it.
    public var maximumLinks: Int
    /// Where the challenges and the pairing exchanges' keys and nonces are drawn from: the
    /// system's cryptographic generator; only the simulator and tests pass a seeded one.
    public var random: RandomSource = .system

    /// 5 s: a phone's whole setup and first command is ten or so ATT round trips, about a
    /// second at the kernel's longest default connection interval (50 ms); five leave room
    /// for a slow phone and still free the link quickly.
    public static let defaultUnauthenticatedLinkTimeout: Duration = .seconds(5)
    public static let defaultRestoreIdentifier = "latchkey.lock.peripheral"

    public init(name: String = "Latchkey", advertisingInterval: Duration = .microseconds(152_500),
                departureGrace: Duration = .seconds(30), challengeLifetime: Duration = ChallengeIssuer.defaultLifetime,
                arrivalPolicy: ArrivalPolicy = ArrivalPolicy(), lockout: LockoutPolicy = LockoutPolicy(),
                restoreIdentifier: String = LockAgentConfiguration.defaultRestoreIdentifier,
                serviceDefinition: GATTService = LockServiceDefinition.service,
                unauthenticatedLinkTimeout: Duration = LockAgentConfiguration.defaultUnauthenticatedLinkTimeout,
                unauthenticatedFrameLimit: Int = CommandVerifier.defaultUnauthenticatedFrameLimit,
                maximumLinks: Int = 4) {
        self.name = name; self.advertisingInterval = advertisingInterval; self.departureGrace = departureGrace
        self.challengeLifetime = challengeLifetime; self.arrivalPolicy = arrivalPolicy; self.lockout = lockout
        self.restoreIdentifier = restoreIdentifier; self.serviceDefinition = serviceDefinition
        self.unauthenticatedLinkTimeout = unauthenticatedLinkTimeout
        self.unauthenticatedFrameLimit = unauthenticatedFrameLimit
        self.maximumLinks = max(1, maximumLinks)
    }
}
