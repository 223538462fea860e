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
        if role == .peripheral { advertiseWhileLinked() }
    }

    /// A central linked: the controller stopped advertising for it. The instance is added
    /// again at once, so that one central (an idle stranger, say) does not hide the lock from
    /// every phone; the kernel refuses it when the controller's LE states do not allow
    /// connectable advertising beside a peripheral link. Then the lock advertises again when
    /// the central leaves (`linkDidEnd`), and the refusal is reported once. The advertising
    /// the application asked for stays asked for either way.
    func advertiseWhileLinked() {
        guard let advertising = requests.advertising, state == .poweredOn, linkedAdvertising.triesWhileLinked
        else { return }
        requests.command(.setDefaultSystemConfiguration(advertising.timing))
        send(.addAdvertising(advertising.instance)) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                _ = self.linkedAdvertising.noteAnswer(took: true)
            case .failure(let error):
                guard self.linkedAdvertising.noteAnswer(took: false) else { return }
                self.onFailure?(KernelError(.management, "this controller cannot advertise while a central is linked "
                                            + "(its LE states, as the kernel checks them; \(error)): a linked central "
                                            + "hides the lock until it leaves"))
            }
        }
    }

    /// A link's socket ended. The kernel queues Device Disconnected before it fails the
    /// link's sockets, so the mgmt socket is read first and its reason used when present.
    /// When a central leaves, the advertising instance is re-added (which restarts it):
    /// a controller that stopped advertising for the connection advertises again even if
    /// the kernel did not re-enable it. Not at once: a power-off ends every link before its
    /// New Settings arrives, and an instance added while the controller shuts down left the
    /// phone's next link dead (HIL scenario 31); so the re-add waits `readvertiseDelay`, and any
    /// change of power state cancels it (power-on re-asserts advertising anyway).
    func linkDidEnd(_ link: KernelLink, errno: Errno?) -> DisconnectReason {
        links.remove(link)
        forgetStored(link)
        connectionTimingWatch.forget(link.peer)
        mgmt.readAvailable()
        if link.role == .peripheral { scheduleReadvertise() }
        return connectedDevices.takeReason(for: link.peer) ?? KernelLink.reason(for: errno)
    }

    private func scheduleReadvertise() {
        guard requests.advertising != nil, state == .poweredOn else { return }
        linkedAdvertising.schedule()
    }

    /// `linkedAdvertising`'s delay ran out.
    func readvertise() {
        // Another central linked meanwhile: the kernel stopped advertising for it.
        guard !links.hasPeripheralLink else { return }
        requests.advertiseAgain()
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
