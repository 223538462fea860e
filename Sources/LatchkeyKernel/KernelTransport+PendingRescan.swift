import LatchkeyMgmt
import LatchkeyTransport

/// What `PendingRescan` is told: where entries wait with no link, and how they are sent again.
extension KernelTransport {
    /// Called on every change: a link came or went, the list changed, the power state changed.
    func restartPendingRefresh() { pendingRescan.restart() }

    func wirePendingRescan() {
        pendingRescan.waitingOn = { [weak self] in
            guard let self, self.isAttached, self.state == .poweredOn, !self.requests.unlinkedPending.isEmpty
            else { return nil }
            return self.index
        }
        pendingRescan.resend = { [weak self] in
            guard let self, self.isAttached, self.state == .poweredOn else { return false }
            self.requests.resendUnlinked()
            return true
        }
        pendingRescan.onFailure = { [weak self] in self?.onFailure?($0) }
    }
}
