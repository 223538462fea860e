import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeyTransport

/// What a link's life changes in the lock's other components, as links come, prove a key and go.
struct LinkLifecycleHooks<Link> {
    /// A link came or went: the lock advertises while it has room for more (`PublishedService`).
    var slotsChanged: () -> Void
    /// A link is gone: its challenge goes (`CommandVerifier`), then its pairing request (`PairingDesk`).
    var forgetChallenge: (LinkID) -> Void
    var forgetPairing: (LinkID) -> Void
    /// A link is gone, or its key ended: its log transfer ends (`AuditLogTransfer`).
    var endTransfer: (LinkID) -> Void
    /// The arrival rules (`ArrivalTracker`): a link ended (bound to a key: its departure grace
    /// starts), a key ended (it earns no arrival), a phone proved its key on a link (it is here).
    var linkEnded: (LinkID, UInt32?) -> Void
    var keyEnded: (UInt32) -> Void
    var phoneIsHere: (UInt32) -> Void
    /// A key has a live link now: someone watches for its revocation (`KeyWatch`).
    var linkBound: () -> Void
    /// Whether the link subscribed to the lock state, and telling it where the lock stands
    /// (`StatusPublisher`).
    var subscribedToState: (Link) -> Bool
    var tellState: (Link) -> Void
}

/// A link's life on the lock's side (docs/SECURITY.md, "Sessions" and "Strangers"), from its
/// connection to its loss: a stranger's timer from the start, the session its phone's first
/// verified frame opens, the key it is bound to (and preserved across a relaunch), what ends
/// with it, and what ends with a key that is no longer current. What a frame proves is decided
/// elsewhere (the verifier, `LockAuthority`); the record of it is the `LinkRegistry`'s.
final class LinkLifecycle<Link: LinkHandle> {
    private let links: LinkRegistry<Link>
    private let bindings: PreservedBindings
    private let hooks: LinkLifecycleHooks<Link>
    private let emit: (Event) -> Void

    init(links: LinkRegistry<Link>, bindings: PreservedBindings, hooks: LinkLifecycleHooks<Link>,
         emit: @escaping (Event) -> Void) {
        self.links = links
        self.bindings = bindings
        self.hooks = hooks
        self.emit = emit
    }

    /// A new link: it has until the unauthenticated-link timeout to prove a key. An address
    /// proves nothing (anyone can send with a bound phone's): a phone's departure timer is
    /// cancelled only by an authenticated command on the new link (`rebind`).
    func connected(_ central: Link) {
        emit(.lockCentralConnected(central: "\(central.identifier)"))
        links.armUnauthenticatedTimer(for: central)
        hooks.slotsChanged()
    }

    /// The link is gone: what it held ends, and a phone's bound link starts its departure grace.
    func disconnected(_ central: Link, reason: DisconnectReason) {
        emit(.lockCentralDisconnected(central: "\(central.identifier)", reason: "\(reason)"))
        let boundTo = links.linkEnded(central.linkID)
        hooks.forgetChallenge(central.linkID)
        hooks.slotsChanged()
        hooks.forgetPairing(central.linkID)
        hooks.endTransfer(central.linkID)
        hooks.linkEnded(central.linkID, boundTo)
    }

    /// What a verified (or tag-verified but refused) frame opened on its link.
    func adopt(_ session: LinkSession?, on central: Link) {
        guard let session else { return }
        _ = links.adopt(session, on: central)
        hooks.linkBound()
        // A phone that subscribed before it proved its key hears where the lock stands now.
        if hooks.subscribedToState(central) { hooks.tellState(central) }
    }

    /// This link belongs to the phone holding `key`: its loss starts the departure grace, and
    /// the binding outlives the agent (`PreservedBindings`).
    func bind(_ central: Link, to key: UInt32) {
        rebind(central, to: key)
        bindings.preserve(central.identifier, key: key)
    }

    /// The link is its phone's again (a verified command, or a relaunch that kept its session).
    func rebind(_ central: Link, to key: UInt32) {
        links.bind(central, to: key)
        hooks.linkBound()
        hooks.phoneIsHere(key)
    }

    /// Why `central` may not subscribe to a characteristic (`forSessions`: the lock state or
    /// the log): a stranger's subscription is refused with an application error, like its
    /// reads. Nil when it may.
    func subscriptionRefusal(_ central: Link, forSessions: Bool) -> CommandRejection? {
        guard forSessions, !links.hasSession(central.linkID) else { return nil }
        emit(.lockSubscriptionRefused(central: "\(central.identifier)", reason: "no session"))
        return CommandRejection.noSession
    }

    /// A subscription to the lock state by a link with a session hears the state at once;
    /// without one it hears nothing until its phone proves its key (`adopt`).
    func subscribed(_ central: Link, toState: Bool) {
        guard toState, links.hasSession(central.linkID) else { return }
        hooks.tellState(central)
    }

    /// `key` is no longer one the lock holds: its links are dropped, its sessions and
    /// transfers end, its stored bindings and arrival credit are forgotten. The lock still
    /// locks behind it: a dropped link's loss starts the departure grace as any phone's does,
    /// so a member revoked while the door stands unlocked behind them does not leave it so.
    func keyNoLongerCurrent(_ key: UInt32) {
        let ended = links.endKey(key)
        for central in ended { hooks.endTransfer(central.linkID) }
        hooks.keyEnded(key)
        bindings.forget(key: key)
        if !ended.isEmpty { emit(.lockKeyEnded(key: key, links: ended.count)) }
    }
}
