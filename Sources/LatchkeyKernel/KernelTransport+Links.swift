import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Links (`KernelLinks` holds them): what a link coming and going means beyond it.
extension KernelTransport: KernelLinksHost {
    public var connectedLinks: [any ATTLink] { links.connected }

    func claimIsDue(_ peer: BluetoothAddress) -> Bool { requests.wants(peer) && connectedDevices.contains(peer) }

    func timing(of peer: BluetoothAddress) -> (handle: UInt16, interval: Duration)? {
        connectionTimingWatch.timing(of: peer)
    }

    func offer(_ link: KernelLink) { delegate?.transport(self, didConnect: link) }

    /// A central linked: advertising beside it (`ControllerRequests.centralLinked`).
    func linkClaimed(_ link: KernelLink) {
        if link.role == .peripheral { requests.centralLinked() }
    }

    /// The kernel queues Device Disconnected before it fails the link's sockets, so the mgmt
    /// socket is read first and its reason used when present. When a central leaves, the
    /// advertising instance is re-added (`ControllerRequests.centralLeft`).
    func linkEnded(_ link: KernelLink, errno: Errno?) -> DisconnectReason {
        connectionTimingWatch.forget(link.peer)
        mgmt.readAvailable()
        if link.role == .peripheral { requests.centralLeft() }
        return connectedDevices.takeReason(for: link.peer) ?? KernelLink.reason(for: errno)
    }

    func disconnect(_ peer: BluetoothAddress, answered: @escaping () -> Void) -> Bool {
        send(.disconnect(peer)) { _ in answered() }
    }

    func report(_ error: KernelError) { onFailure?(error) }

    /// Once, when we first advertise and know the links that are up: a link we hold no
    /// socket for and do not want was made to a predecessor's advertising (a lock agent
    /// SIGKILLed: the kernel kept its instance). Its peer would talk to nobody until a
    /// timeout ended it, and could not link to us meanwhile: it is disconnected.
    func sweepStaleLinks() {
        let stale = connectedDevices.sweepStale { links.holdsSocket(for: $0) || requests.wants($0) }
        for peer in stale {
            send(.disconnect(peer)) { _ in }  // Not Connected: it went by itself
        }
    }
}
