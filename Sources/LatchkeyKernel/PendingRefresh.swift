import LatchkeyTransport

/// The timer that re-sends the pending connections with no link where the controller's failed
/// attempts cannot be watched (no `ConnectFailureWatch`): each change of what is waiting starts
/// the interval over, so the first re-send comes a whole interval after the last change, never in
/// the middle of the kernel's own reaction to it; with the watch open there is no timer at all
/// (no periodic wake-ups while idle). It owns the timer and the interval; `PendingRescan` says what
/// waits and what a re-send sends (`onDue`).
final class PendingRefresh {
    private let timer: OneShotTimer

    /// How long an entry may go without a link before it is sent again (see
    /// `KernelTransport.pendingRefreshInterval`).
    var interval: Duration = KernelTransport.defaultPendingRefreshInterval
    /// The interval ran out: the entries with no link are to be sent again now.
    var onDue: (() -> Void)?

    init(loop: any EventLoop) { timer = OneShotTimer(loop: loop) }

    /// Whether a re-send is scheduled.
    var isRunning: Bool { timer.isPending }

    /// Something changed. `waiting`: entries wait with no link on a powered, attached
    /// controller; `watched` (asked only then): the HCI watch covers them. Returns whether the
    /// timer now runs.
    @discardableResult
    func restart(waiting: Bool, watched: () -> Bool) -> Bool {
        cancel()
        guard waiting, !watched() else { return false }
        timer.start(after: interval) { [weak self] in self?.onDue?() }
        return true
    }

    func cancel() { timer.cancel() }
}
