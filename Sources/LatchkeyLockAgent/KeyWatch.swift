import LatchkeyTransport

/// Notices, within `period`, that a key with a live link stopped being current (revoked by
/// `latchkey keys revoke` from another process, or gone), so the lock can end what that key
/// holds at once instead of at its next request. It looks only while some link is bound to a
/// key: a revoked key with nothing live needs nothing ended (its next request is refused by
/// `LockAuthority`), and an idle lock keeps no timer. Where the daemon reports changes to the
/// key store's files (`changesAreReported`, inotify on the state directory), it looks at each
/// change and once more a period later, instead of every period: an idle linked lock then
/// makes no system call.
final class KeyWatch {
    /// One second: the promise a revocation keeps ("the running lock learns of it within one second").
    static let period: Duration = .seconds(1)

    private let loop: any EventLoop
    private let keysInUse: () -> Set<UInt32>
    private let isCurrent: (UInt32) -> Bool?
    private let ended: (UInt32) -> Void
    private var timer: Scheduled?
    private var reported = false

    init(loop: any EventLoop, keysInUse: @escaping () -> Set<UInt32>, isCurrent: @escaping (UInt32) -> Bool?,
         ended: @escaping (UInt32) -> Void) {
        self.loop = loop
        self.keysInUse = keysInUse
        self.isCurrent = isCurrent
        self.ended = ended
    }

    /// Someone else reports every change to the key store's files (`keysMayHaveChanged`):
    /// no more looking every period. Set once, before links are bound.
    func changesAreReported() {
        reported = true
        stop()
    }

    /// A link was bound to a key: make sure someone is looking.
    func linkBound() {
        guard !reported, timer == nil else { return }
        timer = loop.schedule(after: Self.period) { [weak self] in self?.look() }
    }

    /// The key store's files changed (another process revoked a key, or the lock wrote): look
    /// now, and once more a period later, because a writer's commit becomes visible to readers
    /// only after its last write to the file (SQLite publishes it in the shared-memory index,
    /// which no file event reports).
    func keysMayHaveChanged() {
        guard reported, !keysInUse().isEmpty else { return }
        endRevoked()
        guard timer == nil else { return }
        timer = loop.schedule(after: Self.period) { [weak self] in
            self?.timer = nil
            self?.endRevoked()
        }
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    private func look() {
        timer = nil
        endRevoked()
        if !keysInUse().isEmpty { linkBound() }
    }

    /// A key the store could not read (nil) is looked at again at the next look, not ended.
    private func endRevoked() {
        for key in keysInUse().sorted() where isCurrent(key) == false { ended(key) }
    }
}
