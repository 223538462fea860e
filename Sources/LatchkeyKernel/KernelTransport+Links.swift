import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Links (`KernelLinks` holds them): what a link coming and going means beyond it.
extension KernelTransport: KernelLinksHost {
    public var connectedLinks: [any ATTLink] { links.connected }

    func claimIsDue(_ peer: BluetoothAddress) -> Bool { requests.wants(peer) && connectedDevices.contains(peer) }

    func offer(_ link: KernelLink) { delegate?.transport(self, didConnect: link) }

    /// A central linked: advertising beside it (`ControllerRequests.centralLinked`).
    func linkClaimed(_ link: KernelLink) {
        if link.role == .peripheral { requests.centralLinked() }
    }

    /// The kernel queues Device Disconnected before it fails the link's sockets, so the mgmt
    /// socket is read first and its reason used when present. When a central leaves, the
    /// advertising instance is re-added (`ControllerRequests.centralLeft`).
    func linkEnded(_ link: KernelLink, errno: Errno?) -> DisconnectReason {
        mgmt.readAvailable()
        if link.role == .peripheral { requests.centralLeft() }
        return connectedDevices.takeReason(for: link.peer) ?? KernelLink.reason(for: errno)
    }

    func disconnect(_ peer: BluetoothAddress, answered: @escaping () -> Void) -> Bool {
        send(.disconnect(peer)) { _ in answered() }
    }

    func report(_ error: KernelError) { onFailure?(error) }
}

/// Devices linking (`ConnectedDevices` follows them): the wanted ones are claimed.
extension KernelTransport: ConnectedDevicesHost {
    func keeps(_ peer: BluetoothAddress) -> Bool { links.holdsSocket(for: peer) || requests.wants(peer) }
    var sweepIsDue: Bool { requests.advertising != nil }
    func deviceLinked(_ peer: BluetoothAddress) { links.claimSoon(peer) }
    func linkedDevicesChanged() { restartPendingRefresh() }
}
