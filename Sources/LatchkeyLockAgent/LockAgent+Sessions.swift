import LatchkeyATT
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySecurity
import LatchkeyTransport

/// Nothing for strangers (docs/SECURITY.md, "Sessions" and "Strangers"): the lock's state
/// (`StatusPublisher`) and its log (`AuditLogTransfer`) go only to a link whose phone proved its
/// key on it, sealed to that link's session (`LinkRegistry`); a link that proves nothing within `unauthenticatedLinkTimeout`,
/// or sends `unauthenticatedFrameLimit` frames that fail before their tag, is dropped.
extension LockAgent {
    /// What a verified (or tag-verified but refused) frame opened on its link.
    func adopt(_ session: LinkSession?, on central: Central) {
        guard let session else { return }
        _ = links.adopt(session, on: central)
        keyWatch.linkBound()
        // A phone that subscribed before it proved its key hears where the lock stands now.
        if published.stateSubscribers.contains(where: { $0 === central }) {
            status.tell(central)
        }
    }

    /// This link belongs to the phone holding `key`: its loss starts the departure grace.
    func bind(_ central: Central, to key: UInt32) {
        rebind(central, to: key)
        bindings.preserve(central.identifier, key: key)
    }

    func rebind(_ central: Central, to key: UInt32) {
        links.bind(central, to: key)
        keyWatch.linkBound()
        arrivals.phoneIsHere(key: key)
    }

    /// The lock state and the log are for a link with a session only: a stranger's
    /// subscription is refused with an application error, like its reads.
    public func peripheralManager(_ pm: PeripheralManager, central: Central,
                                  shouldSubscribeTo characteristic: LocalCharacteristic) -> ATTErrorCode? {
        guard published.isForSessions(characteristic),
              !links.hasSession(central.linkID) else { return nil }
        emit(.lockSubscriptionRefused(central: "\(central.identifier)", reason: "no session"))
        return CommandRejection.noSession.attError
    }

    /// A subscription to the lock state by a link with a session hears the state at once;
    /// without one it hears nothing until its phone proves its key (`adopt`).
    public func peripheralManager(_ pm: PeripheralManager, central: Central,
                                  didSubscribeTo characteristic: LocalCharacteristic) {
        guard published.isState(characteristic), links.hasSession(central.linkID) else { return }
        status.tell(central)
    }

    /// A log transfer's payload sealed to the session; nil without one.
    func sealedLog(_ payload: [UInt8], for central: Central) -> [UInt8]? {
        links.seal(payload, as: .logTransfer, for: central)
    }
}
