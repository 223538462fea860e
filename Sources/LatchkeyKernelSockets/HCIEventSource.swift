import LatchkeyMgmt
import LatchkeyPosix

/// Copies of one controller's HCI events, read-only: the kernel's raw HCI socket
/// (`RawHCIEvents`), or a socketpair in tests. The transport reads them to learn of a failed
/// connection attempt, which no mgmt event reports (`KernelTransport.pendingRefreshInterval`).
package protocol HCIEventSource: AnyObject {
    /// Readable when an event is waiting.
    var fileDescriptor: CInt { get }
    /// The next event packet (packet type octet first, as `ConnectAttemptEvent` reads it), or
    /// nil when none is waiting.
    func next() throws(KernelError) -> [UInt8]?
    func close()
}

/// Opens an `HCIEventSource` on a controller.
package protocol HCIEventSourceProvider: AnyObject {
    /// Events of controller `index` that `ConnectAttemptEvent` reads, and as few others as
    /// the kernel's filter allows. Throws when it cannot (no CAP_NET_RAW, no such index).
    func open(index: MgmtIndex) throws(KernelError) -> any HCIEventSource
    /// Events of controller `index` that `ConnectionTimingEvent` reads (the lock's watch of
    /// its links' connection intervals), and no other LE Meta subevent.
    func openConnectionTiming(index: MgmtIndex) throws(KernelError) -> any HCIEventSource
}

/// Raw HCI sockets (HCI_CHANNEL_RAW) bound to one controller. The HCI filter passes LE Meta
/// events, and Command Complete/Status of LE Create Connection Cancel only; the kernel's
/// own other commands wake nothing. It cannot narrow LE Meta by subevent, so a socket filter
/// (classic BPF, `ConnectAttemptEvent.socketFilter`) drops all but the connection completes:
/// advertising reports of any device around never wake the loop, whether or not the
/// controller keeps to the accept list the kernel's auto-connect scan asks for.
package final class RawHCIEvents: HCIEventSourceProvider {
    package init() {}

    package func open(index: MgmtIndex) throws(KernelError) -> any HCIEventSource {
        try open(index: index, events: ConnectAttemptEvent.watchedEvents, opcode: ConnectAttemptEvent.createConnectionCancel,
                 filter: ConnectAttemptEvent.socketFilter)
    }

    /// LE Meta only (opcode 0: no Command Complete/Status passes), narrowed by the socket
    /// filter to the connection completes and the connection update complete.
    package func openConnectionTiming(index: MgmtIndex) throws(KernelError) -> any HCIEventSource {
        try open(index: index, events: [ConnectAttemptEvent.leMeta], opcode: 0,
                 filter: ConnectAttemptEvent.leMetaFilter(passing: ConnectionTimingEvent.subevents))
    }

    private func open(index: MgmtIndex, events wanted: [UInt8], opcode: UInt16,
                      filter: [SocketFilterInstruction]) throws(KernelError) -> any HCIEventSource {
        let fd: CInt
        do {
            fd = try Syscalls.hciEventSocket(device: index.rawValue, events: wanted, opcode: opcode)
        } catch {
            let denied = error.errno == .operationNotPermitted || error.errno == .permissionDenied
            throw KernelError(denied ? .permissionDenied : .system, "\(error) (raw HCI socket on \(index))",
                              errno: error.errno)
        }
        // Without CAP_NET_RAW the kernel keeps only the events of its security filter
        // (hci_sec_filter: no LE Meta) and says nothing: read back what it kept.
        let kept: (types: UInt32, events: [UInt8])
        do { kept = try Syscalls.hciFilter(fd) } catch {
            Syscalls.close(fd)
            throw KernelError(.system, "\(error) (raw HCI socket on \(index))", errno: error.errno)
        }
        let missing = wanted.filter { !kept.events.contains($0) }
        guard missing.isEmpty else {
            Syscalls.close(fd)
            throw KernelError(.permissionDenied, "setsockopt(HCI_FILTER) on \(index): the kernel dropped event(s) "
                              + missing.map { "0x" + String($0, radix: 16) }.joined(separator: ", ")
                              + " from the filter (LE Meta events need CAP_NET_RAW)")
        }
        do { try Syscalls.attachSocketFilter(fd, filter) } catch {
            Syscalls.close(fd)
            throw KernelError(.system, "\(error) (raw HCI socket on \(index))", errno: error.errno)
        }
        return RawHCIEventSocket(fd)
    }
}

package final class RawHCIEventSocket: HCIEventSource {
    package private(set) var fileDescriptor: CInt
    /// An HCI event: type octet, code, length octet, up to 255 parameter octets.
    package static let maximumPacketLength = 3 + 255

    package init(_ fd: CInt) { fileDescriptor = fd }

    deinit { close() }

    package func next() throws(KernelError) -> [UInt8]? {
        do throws(SystemError) {
            guard case .done(let packet) = try Syscalls.receive(fileDescriptor, capacity: Self.maximumPacketLength) else {
                return nil
            }
            // A raw HCI socket never reads 0 bytes; an empty read is the device gone.
            guard !packet.isEmpty else { throw SystemError(.brokenPipe, call: "recv(raw HCI socket)") }
            return packet
        } catch {
            throw KernelError(.system, "\(error)", errno: error.errno)
        }
    }

    package func close() {
        guard fileDescriptor >= 0 else { return }
        Syscalls.close(fileDescriptor)
        fileDescriptor = -1
    }
}

/// An open `HCIEventSource` and its loop registration (one per watch).
package final class HCIEventWatch {
    package let index: MgmtIndex
    package let source: any HCIEventSource
    package var ioWatch: Watch?
    /// Events the filter let through (each one a wake-up of the loop at most).
    package var eventsReceived = 0

    package init(index: MgmtIndex, source: any HCIEventSource) {
        self.index = index
        self.source = source
    }

    /// Reads up to a batch of the events waiting, counting each and handing it to `handle`;
    /// throws the source's error (the controller went away, or the socket failed).
    package func readBatch(_ handle: ([UInt8]) -> Void) throws(KernelError) {
        for _ in 0..<MgmtClient.receiveBatch {
            guard let packet = try source.next() else { return }
            eventsReceived += 1
            handle(packet)
        }
    }

    package func close() {
        ioWatch?.cancel()
        ioWatch = nil
        source.close()
    }
}
