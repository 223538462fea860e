import LatchkeyATT
import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeyTransport

/// Sends the audit log to a phone with a session: one sealed reply per request, in chunks
/// that fit the link, each link's transfer on its own and sent as the link has room.
/// Who may read what is not decided here: the caller passes the scope `LockAuthority` gave.
final class AuditLogTransfer<Link: LinkHandle> {
    private let log: any LockEventLog
    private let loop: any EventLoop
    private let emit: (Event) -> Void
    /// The links subscribed to the transfer characteristic now.
    private let subscribers: () -> [Link]
    /// Sends one chunk on a link; false when its queue is full (`pump` goes on later).
    private let send: (Link, [UInt8]) -> Bool
    /// Each link's reply still being sent.
    private var transfers: [LinkID: ChunkedSender] = [:]

    init(log: any LockEventLog, loop: any EventLoop, emit: @escaping (Event) -> Void,
         subscribers: @escaping () -> [Link], send: @escaping (Link, [UInt8]) -> Bool) {
        self.log = log
        self.loop = loop
        self.emit = emit
        self.subscribers = subscribers
        self.send = send
    }

    /// Answers one request of `link`'s phone holding `key`: nil when its reply is on its way,
    /// the ATT error otherwise (a malformed request, a link not subscribed, a log that cannot
    /// be read). `seal` seals the reply to the link's session (nil without one).
    func start(_ bytes: [UInt8], on link: Link, key: UInt32, scope: LogScope,
               seal: ([UInt8]) -> [UInt8]?) -> ATTErrorCode? {
        guard let request = try? LogRequest(decoding: bytes) else { return .invalidAttributeValueLength }
        guard subscribers().contains(where: { $0 === link }) else { return .cccdImproperlyConfigured }
        let rows: [(sequence: UInt32, bytes: [UInt8])]
        do { rows = try readableEvents(from: request.fromSequence, limit: Int(request.maximumCount), scope: scope,
                                       key: key) } catch {
            return .unlikelyError
        }
        var payload: [UInt8] = []
        for r in rows {
            // What does not fit one sealed reply waits for the next request.
            guard payload.count + 5 + r.bytes.count <= SealedReply.maximumPayloadLength else { break }
            LogTransferRecord.append(sequence: r.sequence, event: r.bytes, to: &payload)
        }
        guard let sealed = seal(payload) else { return CommandRejection.noSession.attError }
        transfers[link.linkID] = ChunkedSender(value: sealed, mtu: link.maximumUpdateValueLength + 3)
        emit(.lockLogTransfer(central: "\(link.identifier)", events: rows.count))
        loop.execute { [weak self] in self?.pump() }
        return nil
    }

    /// Up to `limit` events from `fromSequence` that `scope` lets the key read: the whole
    /// household's for an admin key, only those naming the key for anyone else (a guest learns
    /// nothing of who else comes and goes). The sequence numbers stay, so a phone pages on from
    /// the last one it got; the scan stops at the log's end.
    private func readableEvents(from fromSequence: UInt32, limit: Int, scope: LogScope,
                                key: UInt32) throws -> [(sequence: UInt32, bytes: [UInt8])] {
        guard scope == .ownEvents else { return try log.events(from: fromSequence, limit: limit) }
        var found: [(sequence: UInt32, bytes: [UInt8])] = []
        var next = fromSequence
        while found.count < limit {
            let page = try log.events(from: next, limit: 200)
            guard let last = page.last else { break }
            // An event that does not decode cannot be shown to name this key: it is not sent.
            for row in page where (try? LockEvent(decoding: row.bytes))?.keyID == KeyID(key) {
                found.append(row)
                if found.count == limit { break }
            }
            next = last.sequence + 1
        }
        return found
    }

    /// Sends what each subscribed link's queue takes, until one is full.
    func pump() {
        for link in subscribers() {
            while var sender = transfers[link.linkID], let chunk = sender.peek() {
                guard send(link, chunk) else { return }
                sender.advance()
                transfers[link.linkID] = sender.isFinished ? nil : sender
            }
        }
    }

    /// The link's transfer ends with it (gone, or its key revoked).
    func end(_ link: LinkID) {
        transfers[link] = nil
    }
}
