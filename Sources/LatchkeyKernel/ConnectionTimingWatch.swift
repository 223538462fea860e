import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// The lock's watch of its links' connection intervals, which the arrival rule needs
/// (docs/SECURITY.md, "Arrival unlock") and neither mgmt nor the L2CAP socket gives: a
/// receive-only raw HCI socket copies the controller's LE Connection Complete (peer, interval)
/// and Update Complete (`ConnectionTimingEvent`), filtered so that nothing else wakes the lock.
/// It owns the socket, the refusal and what it learnt per peer; `KernelLinks` opens it when the
/// lock first advertises and hands what it learns to the links (`onTiming`). Where it cannot be
/// opened (no CAP_NET_RAW), `open` says so once and links keep an unknown interval.
final class ConnectionTimingWatch {
    private let events: any HCIEventSourceProvider
    private let loop: PosixEventLoop
    private var watch: HCIEventWatch?
    /// Why the watch could not be opened or failed; cleared when the controller comes back.
    private var refusal: KernelError?
    /// What was learnt per peer (address bits → handle, interval).
    private var timings: [UInt64: (handle: UInt16, interval: Duration)] = [:]

    /// A peer's link has this handle and interval now.
    var onTiming: ((_ peer: UInt64, _ handle: UInt16, _ interval: Duration) -> Void)?
    /// The peer of a link that knows its handle without this watch having seen it connect (a
    /// link adopted from the descriptor store, with its kept state).
    var peerOfHandle: ((UInt16) -> UInt64?)?
    /// The open watch failed while reading; it is closed, and intervals are unknown until the
    /// controller comes back and the watch is opened again.
    var onFailure: ((KernelError) -> Void)?

    init(events: any HCIEventSourceProvider, loop: PosixEventLoop) {
        self.events = events
        self.loop = loop
    }

    /// Events the filter let through on the open watch (each one a wake-up of the loop at most).
    var eventsReceived: Int { watch?.eventsReceived ?? 0 }

    /// Opens the watch on controller `index` unless it is open there; returns the refusal the
    /// first time it cannot be opened (to be reported), nil when open or already refused.
    @discardableResult
    func open(index: MgmtIndex) -> KernelError? {
        if let watch, watch.index == index { return nil }
        close()
        guard refusal == nil else { return nil }
        let source: any HCIEventSource
        do { source = try events.openConnectionTiming(index: index) } catch {
            refusal = error
            return KernelError(error.code, "\(error.message); links' connection intervals stay unknown "
                               + "(arrival unlock refused)", errno: error.errno)
        }
        let watch = HCIEventWatch(index: index, source: source)
        watch.ioWatch = loop.watch(fd: source.fileDescriptor, events: .readable) { [weak self] _ in self?.read() }
        self.watch = watch
        return nil
    }

    /// Closes the watch and forgets what it learnt.
    func close() {
        timings = [:]
        guard let watch else { return }
        self.watch = nil
        watch.close()
    }

    /// The controller came back (perhaps with another index): a refused watch is tried again.
    func forgetRefusal() { refusal = nil }

    /// The handle and interval of `peer`'s link, as the controller last reported them.
    func timing(of peer: BluetoothAddress) -> (handle: UInt16, interval: Duration)? { timings[peer.value] }

    /// `peer`'s link ended: the next link's own complete says anew.
    func forget(_ peer: BluetoothAddress) { timings[peer.value] = nil }

    private func read() {
        guard let watch else { return }
        do { try watch.readBatch(handle) } catch {
            // The controller went away or the socket failed: intervals are unknown until
            // the controller comes back (`indexAdded`) and advertising opens a new watch.
            close()
            refusal = error
            onFailure?(KernelError(error.code, "HCI connection timing watch on \(watch.index): \(error.message)",
                                   errno: error.errno))
        }
    }

    private func handle(_ packet: [UInt8]) {
        switch ConnectionTimingEvent(packet: packet) {
        case .connected(let handle, let peer, let interval)?:
            timings[peer.value] = (handle, interval)
            onTiming?(peer.value, handle, interval)
        case .updated(let handle, let interval)?:
            guard let peer = timings.first(where: { $0.value.handle == handle })?.key ?? peerOfHandle?(handle) else {
                return
            }
            timings[peer] = (handle, interval)
            onTiming?(peer, handle, interval)
        case nil:
            return
        }
    }
}
