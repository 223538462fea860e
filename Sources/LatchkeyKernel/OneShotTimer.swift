import LatchkeyTransport

/// One timer that fires once and knows whether it is still pending: what `PendingRefresh` and
/// `LinkedAdvertising` each schedule. Starting it again replaces the pending one.
final class OneShotTimer {
    private let loop: any EventLoop
    private var scheduled: Scheduled?

    init(loop: any EventLoop) { self.loop = loop }

    /// Whether it is scheduled and has not fired.
    var isPending: Bool { scheduled != nil }

    /// Runs `body` once after `delay`, unless cancelled (or started again) before.
    func start(after delay: Duration, _ body: @escaping () -> Void) {
        cancel()
        scheduled = loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.scheduled = nil
            body()
        }
    }

    func cancel() {
        scheduled?.cancel()
        scheduled = nil
    }
}
