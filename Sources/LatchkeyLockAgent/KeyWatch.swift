import LatchkeyTransport

/// Notices, within `period`, that a key with a live link stopped being current (revoked by
/// `latchkey keys revoke` from another process, or gone), so the lock can end what that key
/// holds at once instead of at its next request. It looks only while some link is bound to a
/// key: a revoked key with nothing live needs nothing ended (its next request is refused by
/// `LockAuthority`), and an idle lock keeps no timer.
final class KeyWatch {
    /// One second: the promise a revocation keeps ("the running lock learns of it within one second").
    static let period: Duration = .seconds(1)

    private let loop: any EventLoop
    private let keysInUse: () -> Set<UInt32>
    private let isCurrent: (UInt32) -> Bool?
    private let ended: (UInt32) -> Void
    private var timer: Scheduled?

    init(loop: any EventLoop, keysInUse: @escaping () -> Set<UInt32>, isCurrent: @escaping (UInt32) -> Bool?,
         ended: @escaping (UInt32) -> Void) {
        self.loop = loop
        self.keysInUse = keysInUse
        self.isCurrent = isCurrent
        self.ended = ended
    }

    /// A link was bound to a key: make sure someone is looking.
    func linkBound() {
        guard timer == nil else { return }
        timer = loop.schedule(after: Self.period) { [weak self] in self?.look() }
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    private func look() {
        timer = nil
        // A key the store could not read (nil) is looked at again in a second, not ended.
        for key in keysInUse().sorted() where isCurrent(key) == false { ended(key) }
        if !keysInUse().isEmpty { linkBound() }
    }
}
