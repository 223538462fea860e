import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyTransport

/// Reading the lock's audit log over the data-transfer characteristic: subscribe,
/// write a `LogRequest`, reassemble the chunked notifications, open them under the link's
/// session (the lock refuses a link without one), decode the events. One fetch at a time,
/// under a silence watch. The coordinator does the link's I/O; each call here says what it
/// needs next.
final class LogTransfer {
    /// What the link must do next for the running fetch.
    enum Step: Equatable {
        /// Nothing: the fetch waits, or it ended (its completion has run).
        case nothing
        /// Subscribe to the data-transfer characteristic; the request follows its answer.
        case subscribe
        /// Write these bytes (the `LogRequest`) to the data-transfer characteristic.
        case write([UInt8])
    }

    /// How long a fetch may hear nothing (no subscription answer, no request answer, no chunk)
    /// before it fails: a lock that stops mid-transfer (killed, its link kept; restarted and
    /// adopting the link without the transfer, which lived in its memory) would otherwise hold
    /// the phone's one fetch, and its caller, for as long as the link lasts. Far above two
    /// connection events at the slowest interval the phone may ask for (4 s).
    static let silence: Duration = .seconds(30)

    private let loop: any EventLoop
    private let events: PhoneEventOutput
    private var logFetch: LogFetch?
    /// The running fetch's silence watch.
    private var logFetchTimer: Scheduled?
    private var figures: LogTransferFigures?

    init(events: PhoneEventOutput) {
        self.loop = events.loop
        self.events = events
    }

    private func emit(_ event: Event) { events.emit(event) }

    /// A fetch is under way: the link is busy with it.
    var isRunning: Bool { logFetch != nil }
    /// The last fetch's figures, set before its completion runs (nil while one runs, or when
    /// its reply never reassembled).
    var lastFigures: LogTransferFigures? { figures }

    /// Starts a fetch; the characteristic is already `notifying` or not. A fetch already
    /// running refuses this one (its completion runs at once): a second request would take
    /// the first one's place, and the first caller would never hear back.
    func start(from sequence: UInt32, limit: UInt16, notifying: Bool,
               completion: @escaping (PhoneAgent.LogResult) -> Void) -> Step {
        guard logFetch == nil else {
            completion(.failure(.notDelivered("a log fetch is running")))
            return .nothing
        }
        let request = LogRequest(fromSequence: sequence, maximumCount: limit)
        logFetch = LogFetch(request: request, completion: completion, startedAt: loop.now)
        figures = nil
        watchLogFetch()
        return notifying ? .write(request.bytes) : .subscribe
    }

    /// (Re)arms the silence watch of the running fetch: each arming cancels the last, so the
    /// one timer that can fire is the running fetch's.
    private func watchLogFetch() {
        logFetchTimer?.cancel()
        logFetchTimer = loop.schedule(after: Self.silence) { [weak self] in self?.logFetchWentSilent() }
    }

    private func logFetchWentSilent() {
        guard let fetch = logFetch else { return }
        logFetch = nil
        emit(.phoneLogFetchTimeout(received: fetch.octets))
        fetch.completion(.failure(.notDelivered("log transfer: nothing from the lock for \(Self.silence)")))
    }

    /// A chunk arrived on the data-transfer characteristic. `open` opens the reassembled
    /// reply under the link's session (nil: it does not open).
    func receive(_ chunk: [UInt8], open: ([UInt8]) -> [UInt8]?) {
        guard var fetch = logFetch else { return }
        fetch.notifications += 1
        fetch.octets += chunk.count
        if fetch.firstChunkAt == nil { fetch.firstChunkAt = loop.now }
        do {
            guard let whole = try fetch.assembler.receive(chunk) else {
                logFetch = fetch
                watchLogFetch()
                return
            }
            logFetch = nil
            figures = LogTransferFigures(notifications: fetch.notifications, octets: fetch.octets,
                                         firstChunk: (fetch.firstChunkAt ?? loop.now) - fetch.startedAt,
                                         elapsed: loop.now - fetch.startedAt)
            guard let opened = open(whole) else {
                fetch.completion(.failure(.notDelivered("log transfer not sealed to this link's session")))
                return
            }
            guard let records = LogTransferRecord.split(opened) else {
                fetch.completion(.failure(.notDelivered("malformed log transfer")))
                return
            }
            var events: [(UInt32, LockEvent)] = []
            for r in records {
                // An event this phone cannot decode fails the fetch: a log with a gap would mislead.
                guard let e = try? LockEvent(decoding: r.event) else {
                    fetch.completion(.failure(.notDelivered("undecodable event #\(r.sequence)")))
                    return
                }
                events.append((r.sequence, e))
            }
            fetch.completion(.success(events))
        } catch {
            logFetch = nil
            fetch.completion(.failure(.notDelivered("log transfer: \(error)")))
        }
    }

    /// The subscription to the data-transfer characteristic changed: the request goes now.
    func subscriptionChanged(error: BluetoothError?) -> Step {
        guard let fetch = logFetch else { return .nothing }
        if let error {
            logFetch = nil
            fetch.completion(.failure(.notDelivered("subscribe: \(error)")))
            return .nothing
        }
        return .write(fetch.request.bytes)
    }

    /// The LogRequest write was answered.
    func requestWritten(error: BluetoothError?) {
        guard let error, let fetch = logFetch else { return }
        logFetch = nil
        fetch.completion(.failure(.notDelivered("log request: \(error)")))
    }

    /// The link went, or its setup starts again: the running fetch fails with `why`.
    func abandon(_ why: String) {
        if let fetch = logFetch { logFetch = nil; fetch.completion(.failure(.notDelivered(why))) }
    }
}

/// What the last log fetch that reassembled a whole reply cost on the link, for
/// `phone-ctl fetch-log` and the HIL's transfer benchmark: the notifications and their
/// octets (chunk headers included: what crossed the link as ATT values), and on the phone's
/// loop clock the time from the request to the first chunk (the request's way, the lock
/// reading and sealing the log) and to the last.
public struct LogTransferFigures: Equatable, Sendable {
    public var notifications: Int
    public var octets: Int
    public var firstChunk: Duration
    public var elapsed: Duration
}

private struct LogFetch {
    var request: LogRequest
    var completion: (PhoneAgent.LogResult) -> Void
    var startedAt: Instant
    var firstChunkAt: Instant?
    var notifications = 0
    var octets = 0
    /// Room for the largest sealed reply the lock sends: 64 KiB of payload with its header
    /// and tag (the assembler's default, 64 KiB, refused a full transfer as too large).
    var assembler = ChunkAssembler(maximumSize: SealedReply.headerLength + SealedReply.maximumPayloadLength
                                                + SealedReply.tagLength)
}
