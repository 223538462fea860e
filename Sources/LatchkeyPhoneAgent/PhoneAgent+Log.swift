import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyTransport

/// Reading the lock's audit log over the data-transfer characteristic: subscribe,
/// write a `LogRequest`, reassemble the chunked notifications, open them under the link's
/// session (the lock refuses a link without one), decode the events.
extension PhoneAgent {
    public typealias LogResult = Result<[(sequence: UInt32, event: LockEvent)], CommandError>

    public func fetchLog(from sequence: UInt32 = 1, limit: UInt16 = 100, completion: @escaping (LogResult) -> Void) {
        guard let transfer = transferCharacteristic, isLinked else {
            completion(.failure(.notDelivered("not linked to the lock")))
            return
        }
        // One at a time: a second request would take the first one's place, and the first
        // caller would never hear back.
        guard logFetch == nil else {
            completion(.failure(.notDelivered("a log fetch is running")))
            return
        }
        let request = LogRequest(fromSequence: sequence, maximumCount: limit)
        logFetch = LogFetch(request: request, completion: completion, startedAt: loop.now)
        lastLogTransfer = nil
        watchLogFetch()
        linkBecameBusy()
        if transfer.isNotifying {
            lockPeripheral.writeValue(request.bytes, for: transfer)
        } else {
            lockPeripheral.setNotifyValue(true, for: transfer)
        }
    }

    /// How long a fetch may hear nothing (no subscription answer, no request answer, no chunk)
    /// before it fails: a lock that stops mid-transfer (killed, its link kept; restarted and
    /// adopting the link without the transfer, which lived in its memory) would otherwise hold
    /// the phone's one fetch, and its caller, for as long as the link lasts. Far above two
    /// connection events at the slowest interval the phone may ask for (4 s).
    public static let logFetchSilence: Duration = .seconds(30)

    /// (Re)arms the silence watch of the running fetch: each arming cancels the last, so the
    /// one timer that can fire is the running fetch's.
    func watchLogFetch() {
        logFetchTimer?.cancel()
        logFetchTimer = loop.schedule(after: Self.logFetchSilence) { [weak self] in self?.logFetchWentSilent() }
    }

    private func logFetchWentSilent() {
        guard let fetch = logFetch else { return }
        logFetch = nil
        emit(.phoneLogFetchTimeout(received: fetch.octets))
        fetch.completion(.failure(.notDelivered("log transfer: nothing from the lock for \(Self.logFetchSilence)")))
    }

    /// A chunk arrived on the data-transfer characteristic.
    func logChunk(_ chunk: [UInt8]) {
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
            lastLogTransfer = LogTransferFigures(notifications: fetch.notifications, octets: fetch.octets,
                                                 firstChunk: (fetch.firstChunkAt ?? loop.now) - fetch.startedAt,
                                                 elapsed: loop.now - fetch.startedAt)
            guard let opened = openReply(whole, as: .logTransfer) else {
                fetch.completion(.failure(.notDelivered("log transfer not sealed to this link's session")))
                return
            }
            guard let records = LogTransferRecord.split(opened) else {
                fetch.completion(.failure(.notDelivered("malformed log transfer")))
                return
            }
            var events: [(UInt32, LockEvent)] = []
            for r in records {
                // An event this phone cannot decode is counted and skipped below, not a reason to drop the log.
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

    /// The subscription to the data-transfer characteristic changed.
    func logSubscriptionChanged(error: BluetoothError?) {
        guard let fetch = logFetch, let transfer = transferCharacteristic else { return }
        if let error {
            logFetch = nil
            fetch.completion(.failure(.notDelivered("subscribe: \(error)")))
            return
        }
        lockPeripheral.writeValue(fetch.request.bytes, for: transfer)
    }

    /// The LogRequest write was answered.
    func logRequestWritten(error: BluetoothError?) {
        guard let error, let fetch = logFetch else { return }
        logFetch = nil
        fetch.completion(.failure(.notDelivered("log request: \(error)")))
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

struct LogFetch {
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
