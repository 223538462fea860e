import LatchkeyATT
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyTransport

/// The lock's state for phones (docs/SECURITY.md, "Sessions"): read or notified only to a
/// link with a session, sealed to it (`LinkRegistry.seal`); a stranger's read is refused with
/// an application error. A notification a full link queue refused is sent again when the
/// manager says there is room.
final class StatusPublisher<Link: LinkHandle> {
    private let links: LinkRegistry<Link>
    /// The state as it is now.
    private let frame: () -> LockStatusFrame
    /// The links subscribed to the lock-state characteristic now.
    private let subscribers: () -> [Link]
    /// Notifies one link; false when its queue is full.
    private let send: (Link, [UInt8]) -> Bool
    private let emit: (Event) -> Void
    /// A notification could not be sent: publish again when there is room.
    private var dirty = false

    init(links: LinkRegistry<Link>, frame: @escaping () -> LockStatusFrame, subscribers: @escaping () -> [Link],
         send: @escaping (Link, [UInt8]) -> Bool, emit: @escaping (Event) -> Void) {
        self.links = links
        self.frame = frame
        self.subscribers = subscribers
        self.send = send
        self.emit = emit
    }

    /// Tells every subscribed link that has a session, each under its own.
    func publish() {
        var allSent = true
        for link in subscribers() where links.hasSession(link.linkID) {
            if !tellOne(link) { allSent = false }
        }
        dirty = !allSent
    }

    /// The manager has room again: what could not be sent goes now.
    func roomAgain() {
        if dirty { publish() }
    }

    /// Tells `link` alone (it subscribed, or proved its key while subscribed).
    func tell(_ link: Link) {
        if !tellOne(link) { dirty = true }
    }

    /// A read of the lock state: sealed to the session, or refused with an application
    /// error (never Insufficient Authentication, which would make a client try to pair).
    func read(by link: Link) -> Result<[UInt8], ATTErrorCode> {
        guard let sealed = links.seal(frame().bytes, as: .status, for: link) else {
            emit(.lockReadRefused(central: "\(link.identifier)", reason: "no session"))
            return .failure(CommandRejection.noSession.attError)
        }
        return .success(sealed)
    }

    /// False when the link's queue was full; true when sent, or when there is no session.
    private func tellOne(_ link: Link) -> Bool {
        guard let sealed = links.seal(frame().bytes, as: .status, for: link) else { return true }
        return send(link, sealed)
    }
}
