import LatchkeyATT

/// The client side of one ATT bearer, as a state machine.
///
/// Procedures (Vol 3, Part G, 4) are queued and run one request at a time, as ATT allows
/// (3.3.2: one outstanding request per bearer). PDUs to send collect in an outbox that the
/// bearer drains when its link can take them (`nextOutgoing()`), so back-pressure never
/// loses a PDU. Responses come in through `receive(_:)`. Completions run synchronously
/// from `receive`, after the client's own state is consistent, so a completion may start
/// the next procedure.
public final class GATTClient {
    public let preferredMTU: Int
    public private(set) var mtu: Int = ATTLimits.minimumMTU

    /// Server-initiated values: (value handle, value, isIndication). Indications are
    /// confirmed automatically, ahead of any request the handler starts: a server holds a
    /// client that has not confirmed a Service Changed indication change-unaware and would
    /// refuse that request (Robust Caching, Vol 3 Part G 2.5.2.1).
    public var onValue: ((UInt16, ATTBytes, Bool) -> Void)?
    /// The server refused a request with Database Out Of Sync (Robust Caching, Vol 3 Part G
    /// 2.5.2.1): its database changed since this client last knew it. Called before that
    /// request's own completion, so whoever keeps a cache drops it before anyone acts on
    /// the error.
    public var onDatabaseOutOfSync: (() -> Void)?
    /// A response ended the last request and nothing else is queued: work that must not
    /// delay anyone's requests can start now (a central's per-link Service Changed chores).
    public var onIdle: (() -> Void)?

    /// Procedures waiting for the bearer.
    private var queue: [Procedure] = []
    private var queueHead = 0
    /// The procedure whose request is outstanding.
    private var current: Procedure?
    /// Encoded PDUs ready to go, oldest first.
    private var outbox: [[UInt8]] = []
    private var outboxHead = 0
    /// Why the bearer can carry no more requests: a transaction timed out (3.3.3) or the
    /// link went away. Procedures submitted afterwards fail with this error.
    public private(set) var failure: GATTClientError?
    /// Once a transaction has timed out, the bearer may carry no more requests (3.3.3).
    public var isDead: Bool { failure != nil }

    public init(preferredMTU: Int = 247) {
        // The Exchange MTU Request carries the MTU in 16 bits (3.4.2.1).
        self.preferredMTU = min(max(ATTLimits.minimumMTU, preferredMTU), Int(UInt16.max))
    }

    /// Takes over an ATT MTU negotiated earlier on this bearer (a process that adopts a
    /// link after a restart: the exchange happens once per connection, 3.4.2.1). Clamped to
    /// what both sides allow: at least 23, at most our preferred MTU.
    public func restoreMTU(_ negotiated: Int) {
        mtu = max(ATTLimits.minimumMTU, min(preferredMTU, negotiated))
    }

    // MARK: Bearer side

    /// The next PDU to transmit, if any. The bearer calls this until nil or the link is full;
    /// when the link says full, it keeps the PDU and calls `requeueFront` with it.
    public func nextOutgoing() -> [UInt8]? {
        guard outboxHead < outbox.count else { return nil }
        let pdu = outbox[outboxHead]
        outboxHead += 1
        if outboxHead == outbox.count { outbox.removeAll(keepingCapacity: true); outboxHead = 0 }
        return pdu
    }

    /// Puts back a PDU the link refused (queue full), to be sent first when it has room.
    public func requeueFront(_ pdu: [UInt8]) {
        if outboxHead > 0 { outboxHead -= 1; outbox[outboxHead] = pdu } else { outbox.insert(pdu, at: 0) }
    }

    public var hasOutgoing: Bool { outboxHead < outbox.count }
    /// Whether a request awaits its response (the bearer runs the 30 s timer while true).
    public var isAwaitingResponse: Bool { current != nil }
    /// No request outstanding and none queued.
    public var isIdle: Bool { current == nil && queueHead == queue.count }

    /// A server-to-client PDU arrived. Returns false when it was not one this client handles.
    @discardableResult
    public func receive(_ bytes: ATTBytes) -> Bool {
        // Undecodable from the server: handled below (dropped and reported as false).
        guard let pdu = try? ATTPDU(decoding: bytes) else {
            // A malformed response still ends the transaction it answers.
            if let op = bytes.first, ATTOpcode(rawValue: op).isServerToClient, current != nil {
                finishCurrent { $0.fail(.invalidResponse("malformed \(ATTOpcode(rawValue: op))")) }
            }
            return false
        }
        switch pdu {
        case .handleValueNotification(let handle, let value):
            onValue?(handle, value, false)
        case .handleValueIndication(let handle, let value):
            enqueue(ATTPDU.handleValueConfirmation.bytes)
            onValue?(handle, value, true)
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
             .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse, .readByGroupTypeResponse,
             .writeResponse, .prepareWriteResponse, .executeWriteResponse:
            guard let proc = current else { return true }  // unsolicited: ignored (3.4.9)
            if let matches = proc.matches, !matches(pdu) { return true }  // another transaction's: dropped
            if case .errorResponse(let req, _, _) = pdu, req != proc.requestOpcode {
                finishCurrent { $0.fail(.invalidResponse("error response for \(req), expected \(proc.requestOpcode)")) }
                return true
            }
            if case .errorResponse(_, _, .databaseOutOfSync) = pdu { onDatabaseOutOfSync?() }
            switch proc.handle(pdu, mtu: mtu) {
            case .send(let next):
                proc.requestOpcode = next.opcode
                enqueue(next.bytes)
            case .done:
                // Only the answer to our own Exchange MTU Request moves the MTU (3.4.2.2);
                // a stray Exchange MTU Response that fails another procedure does not.
                if case .exchangeMTUResponse(let serverMTU) = pdu, proc.requestOpcode == .exchangeMTURequest {
                    mtu = max(ATTLimits.minimumMTU, min(preferredMTU, Int(serverMTU)))
                }
                finishCurrent { _ in }
            }
        default:
            return false
        }
        return true
    }

    /// The bearer's 30 s timer expired with a request outstanding: fail everything.
    public func transactionTimedOut() {
        if failure == nil { failure = .timeout }
        failAll(.timeout)
    }

    /// The link went away: fail everything queued and outstanding.
    public func disconnected() {
        if failure == nil { failure = .disconnected }
        failAll(.disconnected)
    }

    // MARK: Internals

    private func enqueue(_ pdu: [UInt8]) { outbox.append(pdu) }

    func submit(_ proc: Procedure) {
        if let failure {
            proc.fail(failure)
            proc.complete()
            return
        }
        queue.append(proc)
        pump()
    }

    /// Sends a command (no response, no transaction) straight to the outbox.
    func submitCommand(_ pdu: ATTPDU) { if failure == nil { enqueue(pdu.bytes) } }

    private func pump() {
        while current == nil, queueHead < queue.count {
            let proc = queue[queueHead]
            queueHead += 1
            if queueHead == queue.count { queue.removeAll(keepingCapacity: true); queueHead = 0 }
            switch proc.start(mtu: mtu) {
            case .send(let pdu):
                proc.requestOpcode = pdu.opcode
                current = proc
                enqueue(pdu.bytes)
            case .done:
                proc.complete()
            }
        }
    }

    private func finishCurrent(_ body: (Procedure) -> Void) {
        guard let proc = current else { return }
        current = nil
        body(proc)
        proc.complete()
        pump()
        if isIdle, failure == nil { onIdle?() }
    }

    private func failAll(_ error: GATTClientError) {
        let outstanding = current
        let waiting = Array(queue[queueHead...])
        current = nil
        queue.removeAll(); queueHead = 0
        outbox.removeAll(); outboxHead = 0
        outstanding?.fail(error); outstanding?.complete()
        for p in waiting { p.fail(error); p.complete() }
    }
}
