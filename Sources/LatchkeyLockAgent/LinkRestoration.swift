import LatchkeyEvents
import LatchkeyTransport

/// The links that survived the lock agent's death, taken back after its relaunch: each
/// session kept with its link under a key the lock still holds, each binding of a phone whose
/// kept session is on its link, and a stranger's timer for every link without a session.
final class LinkRestoration<Link: LinkHandle> {
    private let links: LinkRegistry<Link>
    private let bindings: PreservedBindings
    private let secret: (UInt32) -> [UInt8]?
    private let rebind: (Link, UInt32) -> Void
    private let linkBound: () -> Void
    private let emit: (Event) -> Void

    /// `secret` is a key's secret while the lock holds it and has not revoked it (nil otherwise);
    /// `rebind` makes a link its phone's again; `linkBound` says a key has a live link now.
    init(links: LinkRegistry<Link>, bindings: PreservedBindings, secret: @escaping (UInt32) -> [UInt8]?,
         rebind: @escaping (Link, UInt32) -> Void, linkBound: @escaping () -> Void, emit: @escaping (Event) -> Void) {
        self.links = links
        self.bindings = bindings
        self.secret = secret
        self.rebind = rebind
        self.linkBound = linkBound
        self.emit = emit
    }

    /// Takes back `centrals`, the links the manager restored.
    func restore(_ centrals: [Link]) {
        links.restoreSessions(for: centrals, secret: secret)
        restoreBindings(for: centrals)
        // A restored link with no session kept is a stranger's until it proves a key.
        for central in centrals where !links.hasSession(central.linkID) {
            links.armUnauthenticatedTimer(for: central)
        }
        if !links.keysInUse.isEmpty { linkBound() }
    }

    /// After a restart: a restored link whose phone's session was kept with it, under the key
    /// its address was bound to, is that phone's again, so its loss starts the departure grace
    /// as before. An address alone proves nothing (anyone can send with a bound phone's): a
    /// link at a bound address without its kept session is dropped, and bound again when its
    /// phone re-links and proves its key.
    private func restoreBindings(for centrals: [Link]) {
        guard let stored = bindings.stored() else { return }
        for central in centrals {
            guard let key = stored[central.identifier.description] else { continue }
            guard links.sessionKey(on: central.linkID) == key else {
                // Its phone's never-ending connect request re-links at once and proves its key
                // with the `present` every link sends; anyone else using that address is gone.
                emit(.lockBindingNotRestored(key: key, central: "\(central.identifier)",
                                             reason: "no kept session of that key on the link"))
                links.drop(central, because: "a phone's address without its kept session: it re-links and proves its key")
                continue
            }
            rebind(central, key)
            emit(.lockBindingRestored(key: key, central: "\(central.identifier)"))
        }
    }
}
