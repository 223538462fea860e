import LatchkeyManagers

/// Revocation ends everything at once (docs/SECURITY.md, "One gate"): `LockAuthority` refuses
/// a revoked key's next request from every entry, and `KeyWatch` notices within a second that
/// a key with a live link was revoked, so its sessions (sealed status, the log) and links end
/// then, not whenever the phone next asks.
extension LockAgent {
    /// The keys something live is bound to: a link's session or its departure binding.
    var keysInUse: Set<UInt32> {
        Set(sessions.values.map(\.keyID)).union(keyOfLink.values)
    }

    /// `key` is no longer one the lock holds: its links are dropped (their loss is no
    /// departure), its sessions, bindings, departure and arrival bookkeeping forgotten.
    func keyNoLongerCurrent(_ key: UInt32) {
        var links = 0
        for central in peripheral.centrals
        where sessions[central.linkID]?.keyID == key || keyOfLink[central.linkID] == key {
            sessions[central.linkID] = nil
            keyOfLink[central.linkID] = nil
            transfers[central.linkID] = nil
            drop(central, because: "key \(key) revoked")
            links += 1
        }
        departureTimers.removeValue(forKey: key)?.cancel()
        departuresSeen[key] = nil
        addressOfKey[key] = nil
        forgetBindings(of: key)
        emit("lock.key_ended", ["key": "\(key)", "links": "\(links)"])
    }
}
