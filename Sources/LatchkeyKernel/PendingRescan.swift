import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Keeps the kernel scanning for the pending connections that have no link, because the
/// kernel can silently stop its auto-connect scan after a failed connection attempt (the
/// reason is at `KernelTransport.pendingRefreshInterval`): they are sent again (Add Device,
/// same action) when the controller's HCI events show such a failure (`ConnectFailureWatch`),
/// or, where those cannot be watched, once they have been without a link for the interval
/// (`PendingRefresh`). It owns the watch and the timer and decides which of them covers the
/// entries; the transport says where entries wait (`waitingOn`) and sends them (`resend`).
final class PendingRescan {
    private let refresh: PendingRefresh
    private let watch: ConnectFailureWatch

    /// Sends the entries with no link again if the controller is attached and powered;
    /// returns whether it could.
    var resend: (() -> Bool)?
    /// The controller's index when entries wait with no link on it, attached and powered; nil otherwise.
    var waitingOn: (() -> MgmtIndex?)?
    /// The watch could not be opened (once, with the timer taking over) or failed while reading.
    var onFailure: ((KernelError) -> Void)?

    init(events: any HCIEventSourceProvider, loop: PosixEventLoop) {
        refresh = PendingRefresh(loop: loop)
        watch = ConnectFailureWatch(events: events, loop: loop)
        refresh.onDue = { [weak self] in
            guard let self, self.resend?() == true else { return }
            self.restart()
        }
        // A failed attempt re-sends the entries with no link; a watch that failed hands over to the timer.
        watch.onFailedAttempt = { [weak self] in _ = self?.resend?() }
        watch.onFailure = { [weak self] error in
            self?.onFailure?(error)
            self?.restart()
        }
    }

    /// How long an entry may go without a link before it is sent again where the watch cannot be opened.
    var interval: Duration {
        get { refresh.interval }
        set { refresh.interval = newValue }
    }

    /// Called on every change (a link came or went, the list changed, the power state
    /// changed). With the HCI event watch open there is no timer at all; without it, the
    /// interval starts over: the first re-send comes a whole interval after the last change,
    /// never in the middle of the kernel's own reaction to it. Returns whether the timer runs.
    @discardableResult
    func restart() -> Bool {
        let index = waitingOn?()
        return refresh.restart(waiting: index != nil, watched: { index.map { self.watchIfPossible(on: $0) } ?? false })
    }

    /// Whether the watch is open on `index`, opened now if needed; when it cannot be, the
    /// reason is reported once and the timer takes over.
    private func watchIfPossible(on index: MgmtIndex) -> Bool {
        switch watch.open(index: index) {
        case .open:
            return true
        case .refused(let error):
            if let error {
                onFailure?(KernelError(error.code, "\(error.message); re-sending pending connections every "
                                       + "\(interval) instead", errno: error.errno))
            }
            return false
        }
    }

    /// The controller went away: the watch closes (re-opened on the next change once it is back).
    func detach() { watch.close() }

    /// The controller came back (perhaps with another index): a refused watch is tried again.
    func attach() { watch.forgetRefusal() }

    /// The transport closes.
    func close() {
        refresh.cancel()
        watch.close()
    }

    // What the transport's tests look at.

    /// The controller the open watch is on; nil when closed.
    var watchIndex: MgmtIndex? { watch.index }
    /// How long after a failed attempt the watch re-sends when no refused cancel came first.
    var settleDelay: Duration {
        get { watch.settleDelay }
        set { watch.settleDelay = newValue }
    }
    /// Whether the watch's re-send waits out the settle delay.
    var resendIsWaiting: Bool { watch.resendIsWaiting }
    /// Events the watch's filter let through.
    var eventsReceived: Int { watch.eventsReceived }
    /// Whether the timer's re-send is scheduled.
    var isTimerRunning: Bool { refresh.isRunning }
}
