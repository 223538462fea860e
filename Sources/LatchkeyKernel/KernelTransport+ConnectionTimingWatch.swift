import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// The lock's watch of its links' connection intervals: the arrival rule refuses an arrival on
/// a link whose interval is above its ceiling or unknown (docs/SECURITY.md, "Arrival unlock"),
/// and neither mgmt nor the L2CAP socket says what the central chose. The controller's LE
/// Connection Complete names the peer and the interval, LE Connection Update Complete changes
/// it; a receive-only raw HCI socket copies both (`ConnectionTimingEvent`), filtered so that
/// nothing else — advertising reports above all — wakes the lock.
/// Opened when the lock first advertises (before any central can link); when it cannot be
/// (no CAP_NET_RAW), that is reported once through `onFailure` and links keep an unknown interval.
extension KernelTransport {
    func openConnectionTimingWatch() {
        if let watch = connectionTimingWatch, watch.index == index { return }
        closeConnectionTimingWatch()
        guard connectionTimingRefusal == nil else { return }
        let source: any HCIEventSource
        do { source = try hciEvents.openConnectionTiming(index: index) } catch {
            connectionTimingRefusal = error
            onFailure?(KernelError(error.code, "\(error.message); links' connection intervals stay unknown "
                                   + "(arrival unlock refused)", errno: error.errno))
            return
        }
        let watch = ConnectFailureWatch(index: index, source: source)
        watch.ioWatch = posixLoop.watch(fd: source.fileDescriptor, events: .readable) { [weak self] _ in
            self?.readConnectionTimingEvents()
        }
        connectionTimingWatch = watch
    }

    func closeConnectionTimingWatch() {
        connectionTimings = [:]
        guard let watch = connectionTimingWatch else { return }
        connectionTimingWatch = nil
        watch.close()
    }

    private func readConnectionTimingEvents() {
        guard let watch = connectionTimingWatch else { return }
        for _ in 0..<MgmtClient.receiveBatch {
            let packet: [UInt8]?
            do { packet = try watch.source.next() } catch {
                // The controller went away or the socket failed: intervals are unknown until
                // the controller comes back (`indexAdded`) and advertising opens a new watch.
                closeConnectionTimingWatch()
                connectionTimingRefusal = error
                onFailure?(KernelError(error.code, "HCI connection timing watch on \(watch.index): \(error.message)",
                                       errno: error.errno))
                return
            }
            guard let packet else { return }
            watch.eventsReceived += 1
            switch ConnectionTimingEvent(packet: packet) {
            case .connected(let handle, let peer, let interval)?:
                connectionTimings[peer.value] = (handle, interval)
                for link in links where link.peer.value == peer.value { link.noteTiming(handle: handle, interval: interval) }
            case .updated(let handle, let interval)?:
                // A link adopted from the store knows its handle from the state kept with it.
                guard let peer = connectionTimings.first(where: { $0.value.handle == handle })?.key
                        ?? links.first(where: { $0.connectionHandle == handle })?.peer.value else { break }
                connectionTimings[peer] = (handle, interval)
                for link in links where link.peer.value == peer { link.noteTiming(handle: handle, interval: interval) }
            case nil:
                break
            }
        }
    }
}
