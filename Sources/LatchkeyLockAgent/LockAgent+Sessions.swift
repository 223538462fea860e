import LatchkeyATT
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySecurity
import LatchkeyTransport

/// Nothing for strangers (docs/SECURITY.md, "Sessions" and "Strangers"): the lock's state
/// and its log go only to a link whose phone proved its key on it, sealed to that link's
/// session; a link that proves nothing within `unauthenticatedLinkTimeout`, or sends
/// `unauthenticatedFrameLimit` frames that fail before their tag, is dropped.
extension LockAgent {
    // MARK: Unauthenticated links

    /// A new (or restored, never bound) link: it has until the timeout to prove a key
    /// (`within`: longer for a link whose pairing waits for the owner's confirmation).
    func armUnauthenticatedTimer(for central: Central, within: Duration? = nil) {
        let limit = within ?? configuration.unauthenticatedLinkTimeout
        unauthenticatedTimers[central.linkID]?.cancel()
        unauthenticatedTimers[central.linkID] = loop.schedule(after: limit) {
            [weak self, weak central] in
            guard let self, let central else { return }
            self.unauthenticatedTimers[central.linkID] = nil
            self.drop(central, because: "unauthenticated for \(limit)")
        }
    }

    /// The link proved a key (a session, or a pairing that gave it one): it stays.
    func linkAuthenticated(_ central: Central) {
        unauthenticatedTimers.removeValue(forKey: central.linkID)?.cancel()
    }

    func linkEnded(_ central: Central) {
        unauthenticatedTimers.removeValue(forKey: central.linkID)?.cancel()
        sessions[central.linkID] = nil
        droppingLinks.remove(central.linkID)
        verifier.forget(central.linkID)
    }

    /// How long a link to be dropped is kept so that the answer to the frame that caused it
    /// crosses first: four connection intervals at the kernel's longest default (50 ms). A
    /// central on a slower interval (the lock accepts any) may lose that answer; the drop
    /// happens all the same.
    static let dropDelay: Duration = .milliseconds(200)

    /// Ends the link through the transport (mgmt Disconnect on the kernel), after `dropDelay`.
    func drop(_ central: Central, because why: String) {
        guard droppingLinks.insert(central.linkID).inserted else { return }
        emit(.lockLinkDropped(central: "\(central.identifier)", reason: why))
        _ = loop.schedule(after: Self.dropDelay) { [weak self, weak central] in
            guard let self, let central else { return }
            self.peripheral.disconnect(central)
        }
    }

    /// What a verified (or tag-verified but refused) frame opened on its link.
    func adopt(_ session: LinkSession?, on central: Central) {
        guard let session else { return }
        let fresh = sessions[central.linkID]?.keyID != session.keyID  // a first session, or another key's
        sessions[central.linkID] = session
        _ = keep(session, sealingThrough: session.sequence, on: central)
        linkAuthenticated(central)
        keyWatch.linkBound()
        if fresh {
            emit(.lockSessionOpened(central: "\(central.identifier)", key: session.keyID))
            endOlderLinks(of: session.keyID, keeping: central)
        }
        // A phone that subscribed before it proved its key hears where the lock stands now.
        if let c = stateCharacteristic, c.subscribedCentrals.contains(where: { $0 === central }) {
            if !sendStatus(to: central, on: c) { statusDirty = true }
        }
    }

    /// The lock state and the log are for a link with a session only: a stranger's
    /// subscription is refused with an application error, like its reads.
    public func peripheralManager(_ pm: PeripheralManager, central: Central,
                                  shouldSubscribeTo characteristic: LocalCharacteristic) -> ATTErrorCode? {
        guard characteristic === stateCharacteristic || characteristic === transferCharacteristic,
              sessions[central.linkID] == nil else { return nil }
        emit(.lockSubscriptionRefused(central: "\(central.identifier)", reason: "no session"))
        return CommandRejection.noSession.attError
    }

    /// A subscription to the lock state by a link with a session hears the state at once;
    /// without one it hears nothing until its phone proves its key (`adopt`).
    public func peripheralManager(_ pm: PeripheralManager, central: Central,
                                  didSubscribeTo characteristic: LocalCharacteristic) {
        guard characteristic === stateCharacteristic, sessions[central.linkID] != nil else { return }
        if !sendStatus(to: central, on: characteristic) { statusDirty = true }
    }

    /// At most one link per key: a key's newer link replaces its older one (a phone that
    /// re-linked before the lock saw its old link fail), so one key's holder cannot take every
    /// link slot with several radios. The older link's loss is no departure: the key is here.
    private func endOlderLinks(of key: UInt32, keeping central: Central) {
        for other in peripheral.centrals where other !== central
            && (sessions[other.linkID]?.keyID == key || keyOfLink[other.linkID] == key) {
            sessions[other.linkID] = nil
            keyOfLink[other.linkID] = nil
            drop(other, because: "key \(key) linked again on another link")
        }
    }

    // MARK: Advertising while linked

    /// Advertises while fewer than `maximumLinks` centrals are linked, and not at the limit:
    /// a phone must always be able to link beside an idle stranger, and a crowd of them must
    /// not take every link the controller has.
    func advertiseWhileLinksAreFree() {
        guard peripheral.state == .poweredOn, service != nil else { return }
        let full = peripheral.centrals.count >= configuration.maximumLinks
        if full, peripheral.advertisement != nil {
            emit(.lockAdvertisingPaused(links: peripheral.centrals.count))
            peripheral.stopAdvertising()
        } else if !full, peripheral.advertisement == nil {
            emit(.lockAdvertisingResumed(links: peripheral.centrals.count))
            peripheral.startAdvertising(advertisement)
        }
    }

    // MARK: Sealed replies

    /// The lock state sealed to `central`'s session; nil without one.
    func sealedStatus(for central: Central) -> [UInt8]? { seal(statusFrame.bytes, as: .status, for: central) }

    /// `payload` sealed as the next reply of `central`'s session; nil without one, or when
    /// the sequence it takes could not be kept with the link first (`keep`).
    private func seal(_ payload: [UInt8], as kind: SealedReply.Kind, for central: Central) -> [UInt8]? {
        guard var session = sessions[central.linkID],
              keep(session, sealingThrough: session.sequence + 1, on: central) else { return nil }
        let reply = session.seal(payload, as: kind)
        sessions[central.linkID] = session
        return reply.bytes
    }

    /// A read of the lock state: sealed to the session, or refused with an application
    /// error (never Insufficient Authentication, which would make a client try to pair).
    func readStatus(by central: Central) -> Result<[UInt8], ATTErrorCode> {
        guard let sealed = sealedStatus(for: central) else {
            emit(.lockReadRefused(central: "\(central.identifier)", reason: "no session"))
            return .failure(CommandRejection.noSession.attError)
        }
        return .success(sealed)
    }

    /// Notifies every subscribed central that has a session, each under its own. False when
    /// a link's queue was full (`peripheralManagerIsReady` sends it again).
    func notifyStatus() -> Bool {
        guard let c = stateCharacteristic else { return true }
        var allSent = true
        for central in c.subscribedCentrals where sessions[central.linkID] != nil {
            if !sendStatus(to: central, on: c) { allSent = false }
        }
        return allSent
    }

    private func sendStatus(to central: Central, on c: LocalCharacteristic) -> Bool {
        guard let sealed = sealedStatus(for: central) else { return true }
        return peripheral.updateValue(sealed, for: c, onSubscribedCentrals: [central])
    }

    /// A log transfer's payload sealed to the session; nil without one.
    func sealedLog(_ payload: [UInt8], for central: Central) -> [UInt8]? { seal(payload, as: .logTransfer, for: central) }
}
