import LatchkeyCentral
import LatchkeyLockProtocol

/// The link's session on this link (`PhoneLinkSession` keeps it).
extension PhoneAgent {
    /// Opens a sealed reply under the link's session; the first that opens proves the link
    /// is the lock's, which the presence machine hears. Nil when it does not open.
    func openReply(_ bytes: [UInt8], as kind: SealedReply.Kind) -> [UInt8]? {
        guard let opened = linkSession.openReply(bytes, as: kind) else { return nil }
        if opened.provedTheLock { feed(.linkVerified) }
        return opened.plain
    }

    /// Once the link has a session, the status subscription (the lock refuses it before):
    /// the lock answers it with where it stands, sealed, and notifies each change after. It
    /// waits for the commands queued behind the first: between a challenge read and its
    /// write it would add two round trips to the time the lock measures for an arrival.
    func subscribeOnceInSession(_ peripheral: Peripheral) {
        guard linkSession.isOpen, commandsIdle, let status, !status.isNotifying, peripheral.state == .connected else { return }
        peripheral.setNotifyValue(true, for: status)  // discovers the CCCD first if unknown
    }
}
