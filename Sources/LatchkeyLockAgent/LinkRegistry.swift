import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity
import LatchkeyTransport

/// The lock's links (docs/SECURITY.md, "Sessions" and "Strangers"): each link's session once
/// its phone proved its key on it, kept with the link so that a relaunched lock seals to the
/// phone again (docs/RESTORATION.md, "Links that outlive the agent"); the key each link is
/// bound to, for the departure rule; the time a link that proves nothing has before it is
/// dropped; at most one link per key. What a frame proves is not decided here (the verifier,
/// `LockAuthority`): this is the record of what was proven, on which link.
final class LinkRegistry<Link: LinkHandle> {
    /// How long a link to be dropped is kept so that the answer to the frame that caused it
    /// crosses first: four connection intervals at the kernel's longest default (50 ms). A
    /// central on a slower interval (the lock accepts any) may lose that answer; the drop
    /// happens all the same.
    static var dropDelay: Duration { .milliseconds(200) }

    private let loop: any EventLoop
    private let unauthenticatedLinkTimeout: Duration
    private let emit: (Event) -> Void
    /// The links up now (the peripheral manager's centrals).
    private let liveLinks: () -> [Link]
    /// Ends a link through the transport (mgmt Disconnect on the kernel).
    private let disconnect: (Link) -> Void

    /// Each link's session, once its phone proved its key on it.
    private var sessions: [LinkID: LinkSession] = [:]
    /// Links that have not proven a key yet, and when they will be dropped.
    private var unauthenticatedTimers: [LinkID: Scheduled] = [:]
    private var droppingLinks: Set<LinkID> = []
    /// Which phone (key) each link belongs to: its loss starts that key's departure grace.
    private var keyOfLink: [LinkID: UInt32] = [:]
    private var addressOfKey: [UInt32: BluetoothAddress] = [:]
    /// Links whose pairing write was accepted, and the key each waits to have enrolled.
    private var pairingLinks: [LinkID: UInt32] = [:]

    init(loop: any EventLoop, unauthenticatedLinkTimeout: Duration, emit: @escaping (Event) -> Void,
         liveLinks: @escaping () -> [Link], disconnect: @escaping (Link) -> Void) {
        self.loop = loop
        self.unauthenticatedLinkTimeout = unauthenticatedLinkTimeout
        self.emit = emit
        self.liveLinks = liveLinks
        self.disconnect = disconnect
    }

    // MARK: Unauthenticated links

    /// A new (or restored, never bound) link: it has until the timeout to prove a key
    /// (`within`: longer for a link whose pairing waits for the owner's confirmation).
    func armUnauthenticatedTimer(for link: Link, within: Duration? = nil) {
        let limit = within ?? unauthenticatedLinkTimeout
        unauthenticatedTimers[link.linkID]?.cancel()
        unauthenticatedTimers[link.linkID] = loop.schedule(after: limit) { [weak self, weak link] in
            guard let self, let link else { return }
            self.unauthenticatedTimers[link.linkID] = nil
            self.drop(link, because: "unauthenticated for \(limit)")
        }
    }

    /// The link proved a key (a session, or a pairing that gave it one): it stays.
    func linkAuthenticated(_ link: Link) {
        unauthenticatedTimers.removeValue(forKey: link.linkID)?.cancel()
    }

    /// The link is gone: what it held ends. Returns the key it was bound to, if any (its
    /// departure grace starts).
    func linkEnded(_ link: LinkID) -> UInt32? {
        unauthenticatedTimers.removeValue(forKey: link)?.cancel()
        sessions[link] = nil
        droppingLinks.remove(link)
        pairingLinks[link] = nil
        return keyOfLink.removeValue(forKey: link)
    }

    /// Ends the link through the transport, after `dropDelay`.
    func drop(_ link: Link, because why: String) {
        guard droppingLinks.insert(link.linkID).inserted else { return }
        emit(.lockLinkDropped(central: "\(link.identifier)", reason: why))
        _ = loop.schedule(after: Self.dropDelay) { [weak self, weak link] in
            guard let self, let link else { return }
            self.disconnect(link)
        }
    }

    func isDropping(_ link: LinkID) -> Bool { droppingLinks.contains(link) }

    // MARK: Sessions

    /// The key whose session `link` has; nil without one.
    func sessionKey(on link: LinkID) -> UInt32? { sessions[link]?.keyID }

    func hasSession(_ link: LinkID) -> Bool { sessions[link] != nil }

    /// What a verified (or tag-verified but refused) frame opened on its link. True when it is
    /// the link's first session, or another key's.
    func adopt(_ session: LinkSession, on link: Link) -> Bool {
        let fresh = sessions[link.linkID]?.keyID != session.keyID
        sessions[link.linkID] = session
        _ = keep(session, sealingThrough: session.sequence, on: link)
        linkAuthenticated(link)
        if fresh {
            emit(.lockSessionOpened(central: "\(link.identifier)", key: session.keyID))
            endOlderLinks(of: session.keyID, keeping: link)
        }
        return fresh
    }

    /// At most one link per key: a key's newer link replaces its older one (a phone that
    /// re-linked before the lock saw its old link fail), so one key's holder cannot take every
    /// link slot with several radios. The older link's loss is no departure: the key is here.
    private func endOlderLinks(of key: UInt32, keeping link: Link) {
        for other in liveLinks() where other !== link
            && (sessions[other.linkID]?.keyID == key || keyOfLink[other.linkID] == key) {
            sessions[other.linkID] = nil
            keyOfLink[other.linkID] = nil
            drop(other, because: "key \(key) linked again on another link")
        }
    }

    /// `payload` sealed as the next reply of `link`'s session; nil without one, or when the
    /// sequence it takes could not be kept with the link first (`keep`).
    func seal(_ payload: [UInt8], as kind: SealedReply.Kind, for link: Link) -> [UInt8]? {
        guard var session = sessions[link.linkID],
              keep(session, sealingThrough: session.sequence + 1, on: link) else { return nil }
        let reply = session.seal(payload, as: kind)
        sessions[link.linkID] = session
        return reply.bytes
    }

    /// Keeps `session` with its link, allowing replies up to `sequence`. False when that
    /// failed (said as `lock.session_not_kept`): the reply must not be sealed, or a
    /// relaunch could seal again under a sequence already used (a reused nonce).
    private func keep(_ session: LinkSession, sealingThrough sequence: UInt32, on link: Link) -> Bool {
        do {
            _ = try link.keepLinkState(session.kept(sealingThrough: sequence))  // false: the link dies with us
            return true
        } catch {
            emit(.lockSessionNotKept(central: "\(link.identifier)", key: session.keyID, error: "\(error)"))
            return false
        }
    }

    /// After a relaunch: the sessions kept with the links that survived, each only under a key
    /// the lock still holds and has not revoked (`secret` gives it; nil: not). What cannot be
    /// restored is said (`lock.session_not_restored`) and the link goes on without a session
    /// (a bound phone's next command opens one; an unbound link has until the
    /// unauthenticated-link timeout to prove a key).
    func restoreSessions(for links: [Link], secret: (UInt32) -> [UInt8]?) {
        for link in links {
            guard let kept = link.keptLinkState else { continue }
            do {
                let keyID = try LinkSession.keyID(ofKept: kept)
                guard let secret = secret(keyID) else {
                    notRestored(link, because: "key \(keyID) is no longer held, or revoked")
                    continue
                }
                let session = try LinkSession(kept: kept, secret: secret)
                sessions[link.linkID] = session
                emit(.lockSessionRestored(central: "\(link.identifier)", key: keyID,
                                          sequence: session.sequence))
            } catch {
                notRestored(link, because: "the kept session is \(error)")
            }
        }
    }

    private func notRestored(_ link: Link, because why: String) {
        emit(.lockSessionNotRestored(central: "\(link.identifier)", reason: why))
    }

    // MARK: Keys

    /// This link belongs to the phone holding `key`: its loss starts the departure grace.
    func bind(_ link: Link, to key: UInt32) {
        keyOfLink[link.linkID] = key
        addressOfKey[key] = link.identifier
    }

    /// The address each key bound to a link now was last seen at, by key.
    var boundAddresses: [(key: UInt32, address: BluetoothAddress)] {
        Set(keyOfLink.values).sorted().compactMap { key in addressOfKey[key].map { (key, $0) } }
    }

    /// The keys something live is bound to: a link's session or its departure binding
    /// (links already being dropped are done with).
    var keysInUse: Set<UInt32> {
        Set(sessions.values.map(\.keyID)).union(keyOfLink.filter { !droppingLinks.contains($0.key) }.values)
    }

    /// `key` is no longer one the lock holds: its links' sessions end and the links are
    /// dropped. Returns the links dropped. Their loss still starts the departure grace, so
    /// the lock locks behind a member revoked while the door stands unlocked behind them.
    func endKey(_ key: UInt32) -> [Link] {
        var ended: [Link] = []
        for link in liveLinks() where !droppingLinks.contains(link.linkID)
            && (sessions[link.linkID]?.keyID == key || keyOfLink[link.linkID] == key) {
            sessions[link.linkID] = nil
            drop(link, because: "key \(key) revoked")
            ended.append(link)
        }
        addressOfKey[key] = nil
        return ended
    }

    // MARK: Pairing

    /// `link`'s pairing write was accepted: its key waits for the owner's word, and the link
    /// may stay that long (`within`).
    func pairingWaits(on link: Link, key: UInt32, within: Duration) {
        pairingLinks[link.linkID] = key
        armUnauthenticatedTimer(for: link, within: within)
    }

    /// The key a link asked for was not enrolled: that link holds no key after all, a
    /// stranger's again, timed like one.
    func pairingNotEnrolled(key: UInt32) {
        for (link, waiting) in pairingLinks where waiting == key {
            pairingLinks[link] = nil
            if let live = liveLinks().first(where: { $0.linkID == link }) { armUnauthenticatedTimer(for: live) }
        }
    }
}
