import LatchkeyATT
import LatchkeyKernelSockets
import LatchkeyPosix
import LatchkeyTransport

/// What a link tells the transport that holds it.
protocol KernelLinkOwner: AnyObject {
    /// Something about the link failed after the call that caused it returned.
    func report(_ error: KernelError)
    /// The link is ending (or was never wanted): its stored copy must go, before our own closes.
    func forgetStored(_ link: KernelLink)
    /// The application ended the link (our socket is closed): the kernel is to disconnect it.
    func linkWasClosedLocally(_ link: KernelLink)
    /// The link ended under us; returns the reason its peer is told.
    func linkDidEnd(_ link: KernelLink, errno: Errno?) -> DisconnectReason
}

/// One ATT bearer on an L2CAP socket (CID 4): one PDU per message, non-blocking.
///
/// Back-pressure is the kernel's: a send the socket buffer cannot take fails with EAGAIN,
/// which is `.full` here (nothing queued), and writable interest is armed until POLLOUT
/// says there is room, which is `linkIsWritable`. End of stream or a socket error ends the
/// link, with the HCI reason of the Device Disconnected event when the kernel sent one.
public final class KernelLink: ATTLink {
    public let id: LinkID
    public let peer: BluetoothAddress
    public let role: LinkRole
    public let maximumTransmissionUnit: Int
    /// Set once a manager claims the link: only then is the socket read, so a link adopted
    /// from the descriptor store loses nothing its peer sent before it was claimed.
    public weak var delegate: (any ATTLinkDelegate)? {
        didSet { if delegate != nil { startReading() } }
    }
    /// The name its socket is kept under in the transport's descriptor store; nil when not kept
    /// (`LinkKeeper` says, through `keptSocket(as:)` and `endKeeping`).
    private(set) var storeName: String?
    /// The memfd kept beside the socket in the store (`KeptLinkState`), and its name there;
    /// nil when the link is not kept, or the file could not be made or kept (reported).
    private(set) var stateFile: (file: MemoryFile, name: String)?
    /// From the LE Connection Complete / Update Complete events of the link's peer, which the
    /// lock's raw HCI watch reads (`ConnectionTimingWatch`), or from the state
    /// kept with an adopted link; nil until one came (or without the watch, CAP_NET_RAW
    /// missing): the lock then refuses arrival on the link.
    public private(set) var connectionInterval: Duration?
    /// The controller's handle of the link, from the same events: an update names only it.
    private(set) var connectionHandle: UInt16?
    public private(set) var keptApplicationState: [UInt8]?

    private var fd: CInt
    private var watch: Watch?
    private let loop: PosixEventLoop
    /// Every message is received into this buffer (`receiveCapacity` octets), then copied out
    /// at its length.
    private var receiveBuffer = [UInt8](repeating: 0, count: KernelLink.receiveCapacity)
    /// Set by a `.full` answer; cleared when `linkIsWritable` is delivered.
    private var owesWritable = false
    private weak var transport: (any KernelLinkOwner)?

    /// The kernel gives ATT sockets an incoming MTU of 672 (L2CAP_DEFAULT_MTU), so no
    /// message is longer; a longer one is reported, not cut.
    static let receiveCapacity = 672
    /// PDUs read per readiness callback before yielding to other fds (fairness).
    static let receiveBatch = 32

    init(id: LinkID, fileDescriptor: CInt, peer: BluetoothAddress, role: LinkRole, maximumTransmissionUnit: Int,
         loop: PosixEventLoop, transport: (any KernelLinkOwner)?) {
        self.id = id
        self.peer = peer
        self.role = role
        self.maximumTransmissionUnit = maximumTransmissionUnit
        self.loop = loop
        self.transport = transport
        fd = fileDescriptor
    }

    /// Its socket is kept in the descriptor store under `name`.
    func keptSocket(as name: String) { storeName = name }

    /// Its state is kept in `file`, under `name` in the store; nil: it is not (any more).
    func keepState(in file: MemoryFile?, name: String) { stateFile = file.map { ($0, name) } }

    /// The link is ending: nothing of it is kept any more. Returns the store names to remove.
    func endKeeping() -> (socket: String?, state: String?) {
        defer { storeName = nil; stateFile = nil }
        return (storeName, stateFile?.name)
    }

    /// What is kept of this link beside its socket.
    var keptState: KeptLinkState {
        KeptLinkState(id: id, peer: peer, role: role, connectionHandle: connectionHandle,
                      connectionInterval: connectionInterval, application: keptApplicationState ?? [])
    }

    /// The link's timing as the controller reported it; kept at once with the link's state.
    func noteTiming(handle: UInt16?, interval: Duration?) {
        guard handle != connectionHandle || interval != connectionInterval else { return }
        connectionHandle = handle
        connectionInterval = interval
        do { try writeKeptState() } catch {
            transport?.report(KernelError(.system, "\(id)'s connection interval not kept (\(error)): a process "
                                          + "that adopts the link would not know it", errno: error.errno))
        }
    }

    /// What an adopted link's predecessor kept (`LinkKeeper.adopt`).
    func restore(_ kept: KeptLinkState) {
        connectionHandle = kept.connectionHandle
        connectionInterval = kept.connectionInterval
        keptApplicationState = kept.application.isEmpty ? nil : kept.application
    }

    public func keep(applicationState state: [UInt8]) throws(TransportError) -> Bool {
        guard storeName != nil else { return false }  // the link ends with this process
        guard state.count <= KeptLinkState.maximumApplicationLength else {
            throw TransportError(.invalidParameters, "\(state.count) octets of link state; at most "
                                 + "\(KeptLinkState.maximumApplicationLength) are kept")
        }
        guard stateFile != nil else {
            throw TransportError(.failed, "\(id) is kept in the descriptor store without its state file")
        }
        let before = keptApplicationState
        keptApplicationState = state
        do { try writeKeptState() } catch {
            keptApplicationState = before
            throw TransportError(.failed, "\(id)'s state not kept: \(error)")
        }
        return true
    }

    /// One write of the whole record (all or nothing, `MemoryFile`).
    func writeKeptState() throws(SystemError) {
        try stateFile?.file.write(keptState.encoded())
    }

    private func startReading() {
        guard watch == nil, fd >= 0 else { return }
        watch = loop.watch(fd: fd, events: owesWritable ? [.readable, .writable] : .readable) { [weak self] events in
            self?.handle(events)
        }
    }

    deinit { if fd >= 0 { Syscalls.close(fd) } }

    public var isConnected: Bool { fd >= 0 }

    public func send(_ pdu: [UInt8]) -> SendResult {
        guard isConnected else { return .disconnected }
        precondition(pdu.count <= maximumTransmissionUnit,
                     "PDU of \(pdu.count) bytes exceeds the bearer MTU \(maximumTransmissionUnit)")
        do {
            switch try Syscalls.send(fd, pdu) {
            case .done: return .sent
            case .wouldBlock:
                owesWritable = true
                watch?.events = [.readable, .writable]
                return .full
            }
        } catch {
            // EPIPE/ECONNRESET/ENOTCONN: the link is gone; report it from the loop, not
            // from inside the caller's send.
            let errno = error.errno
            loop.execute { [weak self] in self?.lost(errno) }
            return .disconnected
        }
    }

    /// Removes the socket from the descriptor store and closes ours while the link is still
    /// up, then asks the kernel to end the link (mgmt Disconnect), so the peer sees it now
    /// rather than after the idle-link timeout (or never, while the store held a copy).
    /// Closing before the link is gone also avoids the 6.1 kernels' crash on an ATT socket
    /// closed after link loss (docs/HIL notes). `didDisconnect` follows on the next turn.
    public func disconnect() {
        guard isConnected else { return }
        transport?.forgetStored(self)
        closeSocket()
        transport?.linkWasClosedLocally(self)
        loop.execute { [weak self] in
            guard let self else { return }
            self.delegate?.link(self, didDisconnect: .localHostTerminated)
        }
    }

    /// Drops the link without telling anyone (an unclaimed link, or the transport closing).
    func drop() {
        closeSocket()
    }

    private func handle(_ events: IOEvents) {
        if events.contains(.writable) {
            watch?.events = .readable
            if owesWritable {
                owesWritable = false
                delegate?.linkIsWritable(self)
            }
        }
        guard events.contains(.readable) || events.contains(.hangUp) || events.contains(.error) else { return }
        for _ in 0..<Self.receiveBatch where isConnected {
            let received: IOResult<Int>
            do { received = try Syscalls.receive(fd, into: &receiveBuffer) } catch {
                return lost(error.errno)
            }
            switch received {
            case .wouldBlock: return
            case .done(0): return lost(nil)
            case .done(let n):
                let pdu = Array(receiveBuffer[..<n])
                delegate?.link(self, didReceive: pdu)
                // A client sends its next request only after our answer to this one (one
                // transaction at a time, Vol 3 Part F 3.3.2), so nothing is likely queued
                // behind it: another recv would only say EAGAIN, one system call of the four
                // a read cost. The poll is level-triggered: a command that did follow is
                // read on the next turn.
                if Self.endsBatch(pdu) { return }
            }
        }
    }

    /// Whether the batch stops after `pdu`: after a request (see `handle`).
    static func endsBatch(_ pdu: [UInt8]) -> Bool { ATTOpcode(rawValue: pdu[0]).isRequest }

    /// The link ended under us (end of stream, or `errno`).
    private func lost(_ errno: Errno?) {
        guard isConnected else { return }
        closeSocket()
        let reason = transport?.linkDidEnd(self, errno: errno) ?? Self.reason(for: errno)
        delegate?.link(self, didDisconnect: reason)
    }

    private func closeSocket() {
        watch?.cancel()
        watch = nil
        Syscalls.close(fd)
        fd = -1
    }

    /// The HCI reason behind a socket error: net/bluetooth/lib.c `bt_to_errno` maps 0x08
    /// (connection timeout) to ETIMEDOUT, 0x13–0x15 (remote terminated, low resources,
    /// power off) to ECONNRESET and 0x16 (local host) to ECONNABORTED. End of stream
    /// without an error is the peer's doing.
    static func reason(for errno: Errno?) -> DisconnectReason {
        if errno == .timedOut { return .connectionTimeout }
        if errno == .connectionAborted { return .localHostTerminated }
        return .remoteUserTerminated
    }
}
