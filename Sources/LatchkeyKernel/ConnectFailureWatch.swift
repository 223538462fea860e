import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Watches the controller's HCI events (copies, through `HCIEventSource`) for the failed
/// connection attempt after which a 6.12 kernel leaves its auto-connect scan off, and says
/// then, and only then, that the entries with no link must be sent again (`onFailedAttempt`):
/// no mgmt event reports that failure (see `KernelTransport.pendingRefreshInterval`), and a
/// timer would wake an idle phone every interval. It owns the socket, the refusal and the
/// delayed re-send. `PendingRescan` opens it when the first entry is left without a link (the
/// lock never does); where it cannot be opened, `open` says so once and the timer re-sends.
final class ConnectFailureWatch {
    private let events: any HCIEventSourceProvider
    private let loop: PosixEventLoop
    private var watch: HCIEventWatch?
    /// Why the watch could not be opened or failed; cleared when the controller comes back.
    private var refusal: KernelError?
    /// A re-send waiting after a failed LE Connection Complete that no refused cancel followed.
    private var resend: Scheduled?

    /// How long after a failed LE Connection Complete the entries are re-sent if no refused
    /// LE Create Connection Cancel came first (on 6.12 one does, within a millisecond, and
    /// re-sends at once). Our choice: above the 2 s within which the kernel's cancel is
    /// answered or given up (HCI_CMD_TIMEOUT), so a re-send does not meet the attempt still
    /// pending, when the scan update does nothing.
    var settleDelay: Duration = .seconds(3)
    /// A connection attempt failed and the kernel will not scan again by itself: the entries
    /// with no link are to be sent again now.
    var onFailedAttempt: (() -> Void)?
    /// The open watch failed while reading; it is closed until the controller comes back.
    var onFailure: ((KernelError) -> Void)?

    init(events: any HCIEventSourceProvider, loop: PosixEventLoop) {
        self.events = events
        self.loop = loop
    }

    /// What `open` found.
    enum Opening: Equatable {
        case open
        /// It cannot be opened: the reason, the first time (to be reported), then nil.
        case refused(KernelError?)
    }

    /// Opens the watch on controller `index` unless it is open there.
    func open(index: MgmtIndex) -> Opening {
        if let watch, watch.index == index { return .open }
        close()
        guard refusal == nil else { return .refused(nil) }
        let source: any HCIEventSource
        do {
            source = try events.open(index: index)
        } catch {
            refusal = error
            return .refused(error)
        }
        let watch = HCIEventWatch(index: index, source: source)
        watch.ioWatch = loop.watch(fd: source.fileDescriptor, events: .readable) { [weak self] _ in self?.read() }
        self.watch = watch
        return .open
    }

    /// Closes the watch and drops a re-send waiting out the settle delay.
    func close() {
        resend?.cancel()
        resend = nil
        guard let watch else { return }
        self.watch = nil
        watch.close()
    }

    /// The controller came back (perhaps with another index): a refused watch is tried again.
    func forgetRefusal() { refusal = nil }

    /// The controller the open watch is on; nil when closed.
    var index: MgmtIndex? { watch?.index }
    /// Whether a re-send waits out the settle delay.
    var resendIsWaiting: Bool { resend != nil }
    /// Events the filter let through on the open watch (each one a wake-up of the loop at most).
    var eventsReceived: Int { watch?.eventsReceived ?? 0 }

    private func read() {
        guard let watch else { return }
        do { try watch.readBatch(handle) } catch {
            // The controller went away (EPIPE) or the socket failed: the timer takes over
            // until the controller comes back (`indexAdded`), which tries a new watch.
            close()
            refusal = error
            onFailure?(KernelError(error.code, "HCI event watch on \(watch.index): \(error.message)", errno: error.errno))
        }
    }

    private func handle(_ packet: [UInt8]) {
        switch ConnectAttemptEvent(packet: packet) {
        case .cancelRefused?:
            // The kernel's abort sent this cancel from its command queue (hci_cmd_sync_work)
            // and ends there in the cleanup that leaves the scan off; Add Device queues its
            // scan update on the same queue (add_device_sync), so it runs after that cleanup.
            failedAttempt()
        case .failed?:
            // On 6.12 a refused cancel follows within a millisecond and re-sends at once;
            // this is for a kernel that cleans up without one.
            guard resend == nil else { return }
            resend = loop.schedule(after: settleDelay) { [weak self] in self?.failedAttempt() }
        case nil:
            return
        }
    }

    private func failedAttempt() {
        resend?.cancel()
        resend = nil
        onFailedAttempt?()
    }
}
