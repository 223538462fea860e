import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Links: the lock's side accepts on a listening ATT socket; the phone's side claims a
/// link the kernel made from the auto-connect list by opening its ATT socket as soon as
/// Device Connected arrives, before the kernel drops the unused link (~2 s).
extension KernelTransport {
    public var connectedLinks: [any ATTLink] { links.connected }

    /// Listens on our ATT channel; opened with the first advertising (only a peripheral
    /// takes incoming links, and a listener would also take the ATT channel of links the
    /// phone's auto-connect makes).
    func openListener() throws(KernelError) {
        guard isAttached else { return }
        try listener.open(on: address)
    }

    func closeListener() { listener.close() }

    /// Claims the link to `peer` on the next turn if we asked for it and it is up.
    func claimIfWanted(_ peer: BluetoothAddress) {
        guard requests.wants(peer), connectedDevices.contains(peer) else { return }
        posixLoop.execute { [weak self] in self?.claim(peer) }
    }

    private func claim(_ peer: BluetoothAddress) {
        guard isAttached, requests.wants(peer), connectedDevices.contains(peer), !claims.isClaiming(peer),
              !links.holds(peer) else { return }
        switch claims.claim(peer, from: address) {
        case .connected(let fd): linkUp(fd, peer: peer, role: .central)
        case .connecting: break
        case .failed(let error): onFailure?(error)
        }
    }

    func cancelClaims() { claims.cancelAll() }

    /// A link with its socket: reported to the delegate, which must claim it by setting
    /// its delegate; an unclaimed link is closed, and the kernel drops it.
    func linkUp(_ fd: CInt, peer: BluetoothAddress, role: LinkRole) {
        let link = KernelLink(id: links.nextID(), fileDescriptor: fd, peer: peer, role: role,
                              maximumTransmissionUnit: sockets.maximumTransmissionUnit(fd), loop: posixLoop,
                              transport: self)
        let timing = connectionTimingWatch.timing(of: peer)
        link.noteTiming(handle: timing?.handle, interval: timing?.interval)
        links.add(link)
        linkKeeper.keep(link, fileDescriptor: fd)
        delegate?.transport(self, didConnect: link)
        if link.delegate == nil {
            links.remove(link)
            forgetStored(link)
            link.drop()
            return
        }
        if role == .peripheral { requests.centralLinked() }
    }

    /// A link's socket ended. The kernel queues Device Disconnected before it fails the
    /// link's sockets, so the mgmt socket is read first and its reason used when present.
    /// When a central leaves, the advertising instance is re-added (`ControllerRequests.centralLeft`).
    func linkDidEnd(_ link: KernelLink, errno: Errno?) -> DisconnectReason {
        links.remove(link)
        forgetStored(link)
        connectionTimingWatch.forget(link.peer)
        mgmt.readAvailable()
        if link.role == .peripheral { requests.centralLeft() }
        return connectedDevices.takeReason(for: link.peer) ?? KernelLink.reason(for: errno)
    }

    /// Once, when we first advertise and know the links that are up: a link we hold no
    /// socket for and do not want was made to a predecessor's advertising (a lock agent
    /// SIGKILLed: the kernel kept its instance). Its peer would talk to nobody until a
    /// timeout ended it, and could not link to us meanwhile: it is disconnected.
    func sweepStaleLinks() {
        let stale = connectedDevices.sweepStale { holdsSocket(for: $0) || requests.wants($0) }
        for peer in stale {
            send(.disconnect(peer)) { _ in }  // Not Connected: it went by itself
        }
    }

    /// Whether a link or a claim of ours uses the baseband link to `peer`.
    func holdsSocket(for peer: BluetoothAddress) -> Bool {
        claims.isClaiming(peer) || links.holds(peer)
    }

    /// The application ended a link: the kernel is asked to disconnect now (our socket is
    /// closed, and the store's copy removed: neither would end it). "Not Connected" (the link
    /// was already going) is no failure.
    func linkWasClosedLocally(_ link: KernelLink) {
        links.remove(link)
        send(.disconnect(link.peer)) { _ in }
    }
}
