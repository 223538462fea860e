import LatchkeyEvents
import LatchkeyManagers

/// Revocation ends everything at once (docs/SECURITY.md, "One gate"): `LockAuthority` refuses
/// a revoked key's next request from every entry, and `KeyWatch` notices within a second that
/// a key with a live link was revoked, so its sessions (sealed status, the log) and links end
/// then, not whenever the phone next asks.
extension LockAgent {
    /// `key` is no longer one the lock holds: its links are dropped, its sessions and
    /// transfers end, its stored bindings and arrival credit are forgotten. The lock still
    /// locks behind it: a dropped link's loss starts the departure grace as any phone's does,
    /// so a member revoked while the door stands unlocked behind them does not leave it so.
    func keyNoLongerCurrent(_ key: UInt32) {
        let ended = links.endKey(key)
        for central in ended { logTransfer.end(central.linkID) }
        arrivals.keyEnded(key)
        bindings.forget(key: key)
        if !ended.isEmpty { emit(.lockKeyEnded(key: key, links: ended.count)) }
    }
}

extension LockAgent {
    /// The daemon watches the key store's files and calls `keyStoreMayHaveChanged` at every
    /// change: the key watch stops looking every second.
    public func reportKeyStoreChanges() { keyWatch.changesAreReported() }

    /// The key store's files changed: a revoked key's links end now.
    public func keyStoreMayHaveChanged() { keyWatch.keysMayHaveChanged() }
}
