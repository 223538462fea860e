import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Watches the controller's HCI events (copies, through `HCIEventSource`) for the failed
/// connection attempt after which a 6.12 kernel leaves its auto-connect scan off, and
/// re-sends the wanted entries with no link then, and only then: no mgmt event reports
/// that failure (see `pendingRefreshInterval`), and a timer would wake the phone every
/// interval while its lock is away (no periodic wake-ups while idle).
///
/// Opened when the first entry is left without a link (the lock, which has none, never
/// opens it); when it cannot be opened the re-send falls back to `pendingRefreshInterval`.
extension KernelTransport {
    /// The open watch on the current index, opened now if needed; nil when it cannot be
    /// (the reason is reported once through `onFailure`, and the timer takes over).
    func connectFailureWatchIfPossible() -> HCIEventWatch? {
        if let watch = connectFailureWatch, watch.index == index { return watch }
        closeConnectFailureWatch()
        guard connectFailureWatchRefusal == nil else { return nil }
        let source: any HCIEventSource
        do {
            source = try hciEvents.open(index: index)
        } catch {
            connectFailureWatchRefusal = error
            onFailure?(KernelError(error.code, "\(error.message); re-sending pending connections every "
                                   + "\(pendingRefreshInterval) instead", errno: error.errno))
            return nil
        }
        let watch = HCIEventWatch(index: index, source: source)
        watch.ioWatch = posixLoop.watch(fd: source.fileDescriptor, events: .readable) { [weak self] _ in
            self?.readConnectAttemptEvents()
        }
        connectFailureWatch = watch
        return watch
    }

    func closeConnectFailureWatch() {
        connectFailureResend?.cancel()
        connectFailureResend = nil
        guard let watch = connectFailureWatch else { return }
        connectFailureWatch = nil
        watch.close()
    }

    /// The controller came back (perhaps with another index): a refused watch is tried again.
    func forgetConnectFailureWatchRefusal() { connectFailureWatchRefusal = nil }

    private func readConnectAttemptEvents() {
        guard let watch = connectFailureWatch else { return }
        for _ in 0..<MgmtClient.receiveBatch {
            let packet: [UInt8]?
            do { packet = try watch.source.next() } catch {
                // The controller went away (EPIPE) or the socket failed: the timer takes over
                // until the controller comes back (`indexAdded`), which tries a new watch.
                closeConnectFailureWatch()
                connectFailureWatchRefusal = error
                onFailure?(KernelError(error.code, "HCI event watch on \(watch.index): \(error.message)", errno: error.errno))
                restartPendingRefresh()
                return
            }
            guard let packet else { return }
            watch.eventsReceived += 1
            switch ConnectAttemptEvent(packet: packet) {
            case .cancelRefused?:
                // The kernel's abort sent this cancel from its command queue (hci_cmd_sync_work)
                // and ends there in the cleanup that leaves the scan off; Add Device queues its
                // scan update on the same queue (add_device_sync), so it runs after that cleanup.
                resendAfterFailedConnect()
            case .failed?:
                // On 6.12 a refused cancel follows within a millisecond and re-sends at once;
                // this is for a kernel that cleans up without one.
                guard connectFailureResend == nil else { break }
                connectFailureResend = posixLoop.schedule(after: connectFailureSettleDelay) { [weak self] in
                    self?.resendAfterFailedConnect()
                }
            case nil:
                break
            }
        }
    }

    private func resendAfterFailedConnect() {
        connectFailureResend?.cancel()
        connectFailureResend = nil
        guard isAttached, state == .poweredOn else { return }
        for peer in unlinkedPendingConnections { resendPending(peer) }
    }
}
