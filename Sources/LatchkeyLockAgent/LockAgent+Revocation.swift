import LatchkeyEvents
import LatchkeyManagers

/// Revocation ends everything at once (docs/SECURITY.md, "One gate"): `LockAuthority` refuses
/// a revoked key's next request from every entry, and `KeyWatch` notices within a second that
/// a key with a live link was revoked, so its sessions (sealed status, the log) and links end
/// then, not whenever the phone next asks.
extension LockAgent {
    /// The keys something live is bound to: a link's session or its departure binding
    /// (links already being dropped are done with).
    var keysInUse: Set<UInt32> {
        Set(sessions.values.map(\.keyID)).union(keyOfLink.filter { !droppingLinks.contains($0.key) }.values)
    }

    /// `key` is no longer one the lock holds: its links are dropped, its sessions and
    /// transfers end, its stored bindings and arrival credit are forgotten. The lock still
    /// locks behind it: a dropped link's loss starts the departure grace as any phone's does,
    /// so a member revoked while the door stands unlocked behind them does not leave it so.
    func keyNoLongerCurrent(_ key: UInt32) {
        var links = 0
        for central in peripheral.centrals where !droppingLinks.contains(central.linkID)
            && (sessions[central.linkID]?.keyID == key || keyOfLink[central.linkID] == key) {
            sessions[central.linkID] = nil
            transfers[central.linkID] = nil
            drop(central, because: "key \(key) revoked")
            links += 1
        }
        departuresSeen[key] = nil
        addressOfKey[key] = nil
        forgetBindings(of: key)
        if links > 0 { emit(.lockKeyEnded(key: key, links: links)) }
    }
}
