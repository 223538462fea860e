/// Revocation ends everything at once (docs/SECURITY.md, "One gate"): `LockAuthority` refuses
/// a revoked key's next request from every entry, and `KeyWatch` notices within a second that
/// a key with a live link was revoked, so its sessions (sealed status, the log) and links end
/// then, not whenever the phone next asks (`LinkLifecycle.keyNoLongerCurrent`).
extension LockAgent {
    /// The daemon watches the key store's files and calls `keyStoreMayHaveChanged` at every
    /// change: the key watch stops looking every second.
    public func reportKeyStoreChanges() { parts.keyWatch.changesAreReported() }

    /// The key store's files changed: a revoked key's links end now.
    public func keyStoreMayHaveChanged() { parts.keyWatch.keysMayHaveChanged() }
}
