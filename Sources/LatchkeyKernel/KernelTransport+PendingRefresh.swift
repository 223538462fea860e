import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Keeps the kernel scanning for the pending connections that have no link, because the
/// kernel can silently stop its auto-connect scan after a failed connection attempt (the
/// reason is at `pendingRefreshInterval`): each is sent again (Add Device, same action) when
/// the controller's HCI events show such a failure (`ConnectFailureWatch`),
/// or, where those cannot be watched, once it has been without a link for
/// `pendingRefreshInterval`. The kernel keeps the entry as it is; the command only makes it
/// restart the scan.
extension KernelTransport {
    /// Called on every change (a link came or went, the list changed, the power state
    /// changed). With the HCI event watch open there is no timer at all; without it, the
    /// interval starts over: the first re-send comes a whole interval after the last change,
    /// never in the middle of the kernel's own reaction to it.
    func restartPendingRefresh() {
        pendingRefresh.restart(waiting: isAttached && state == .poweredOn && !requests.unlinkedPending.isEmpty,
                               watched: connectFailureWatchIfPossible)
    }

    func cancelPendingRefresh() {
        pendingRefresh.cancel()
        connectFailureWatch.close()
    }

    /// Whether the connect-failure watch is open on the current index, opened now if needed;
    /// when it cannot be, the reason is reported once through `onFailure` and the timer takes over.
    func connectFailureWatchIfPossible() -> Bool {
        switch connectFailureWatch.open(index: index) {
        case .open:
            return true
        case .refused(let error):
            if let error {
                onFailure?(KernelError(error.code, "\(error.message); re-sending pending connections every "
                                       + "\(pendingRefreshInterval) instead", errno: error.errno))
            }
            return false
        }
    }

    /// A failed attempt re-sends the entries with no link; a watch that failed hands over to the timer.
    func wireConnectFailureWatch() {
        connectFailureWatch.onFailedAttempt = { [weak self] in
            guard let self, self.isAttached, self.state == .poweredOn else { return }
            self.requests.resendUnlinked()
        }
        connectFailureWatch.onFailure = { [weak self] error in
            self?.onFailure?(error)
            self?.restartPendingRefresh()
        }
    }
}
