import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Keeps the kernel scanning for the pending connections that have no link, because the
/// kernel can silently stop its auto-connect scan after a failed connection attempt (the
/// reason is at `pendingRefreshInterval`): each is sent again (Add Device, same action) when
/// the controller's HCI events show such a failure (KernelTransport+ConnectFailureWatch.swift),
/// or, where those cannot be watched, once it has been without a link for
/// `pendingRefreshInterval`. The kernel keeps the entry as it is; the command only makes it
/// restart the scan.
extension KernelTransport {
    /// Wanted peers with no baseband link: the ones the kernel should be scanning for.
    var unlinkedPendingConnections: [BluetoothAddress] {
        pendingConnections.subtracting(connectedDevices).sorted()
    }

    /// Called on every change (a link came or went, the list changed, the power state
    /// changed). With the HCI event watch open there is no timer at all; without it, the
    /// interval starts over: the first re-send comes a whole interval after the last change,
    /// never in the middle of the kernel's own reaction to it.
    func restartPendingRefresh() {
        pendingRefreshTimer?.cancel()
        pendingRefreshTimer = nil
        guard isAttached, state == .poweredOn, !unlinkedPendingConnections.isEmpty else { return }
        if connectFailureWatchIfPossible() != nil { return }
        pendingRefreshTimer = posixLoop.schedule(after: pendingRefreshInterval) { [weak self] in
            guard let self else { return }
            self.pendingRefreshTimer = nil
            guard self.isAttached, self.state == .poweredOn else { return }
            for peer in self.unlinkedPendingConnections { self.resendPending(peer) }
            self.restartPendingRefresh()
        }
    }

    /// Sends an entry the kernel holds once more. A refusal is reported and asked again, and
    /// the entry stays wanted: the kernel still has it from the first Add Device.
    func resendPending(_ peer: BluetoothAddress) { sendAddDevice(peer) }

    func cancelPendingRefresh() {
        pendingRefreshTimer?.cancel()
        pendingRefreshTimer = nil
        closeConnectFailureWatch()
    }
}
