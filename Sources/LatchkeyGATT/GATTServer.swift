import LatchkeyATT

/// Where the application plugs into a server: dynamic reads, writes, subscriptions.
/// Every method has a default, so a delegate implements only what it handles.
public protocol GATTServerDelegate: AnyObject {
    /// A read of a dynamic characteristic value (one defined with `value: nil`).
    /// Return the whole value; the server applies the offset and the MTU.
    func server(_ server: GATTServer, readDynamicValueAt handle: UInt16) -> Result<[UInt8], ATTErrorCode>
    /// A write (request, command, or an executed prepared write) to a characteristic value or
    /// a descriptor other than the CCCD. Return nil to accept; the server then stores the value
    /// unless the characteristic is dynamic.
    func server(_ server: GATTServer, write value: ATTBytes, at handle: UInt16, withResponse: Bool) -> ATTErrorCode?
    /// The client asks to turn notifications or indications on: nil allows it, an error
    /// (an application error, say) refuses it and the CCCD keeps its value. Turning them
    /// off is always allowed.
    func server(_ server: GATTServer, shouldChangeClientConfiguration configuration: ClientConfiguration,
                forValueAt handle: UInt16) -> ATTErrorCode?
    /// The client changed a CCCD.
    func server(_ server: GATTServer, didChangeClientConfiguration configuration: ClientConfiguration,
                forValueAt handle: UInt16)
    /// The client confirmed the indication sent for `handle`.
    func server(_ server: GATTServer, didConfirmIndicationAt handle: UInt16)
    /// The client wrote its Client Supported Features (Vol 3 Part G 7.2).
    func server(_ server: GATTServer, didChangeClientFeatures features: ClientSupportedFeatures)
    /// The client's Exchange MTU set the bearer's ATT_MTU.
    func server(_ server: GATTServer, didExchangeMTU mtu: Int)
}

extension GATTServerDelegate {
    public func server(_ server: GATTServer, readDynamicValueAt handle: UInt16) -> Result<[UInt8], ATTErrorCode> {
        .failure(.readNotPermitted)
    }
    public func server(_ server: GATTServer, write value: ATTBytes, at handle: UInt16, withResponse: Bool) -> ATTErrorCode? {
        nil
    }
    public func server(_ server: GATTServer, shouldChangeClientConfiguration configuration: ClientConfiguration,
                       forValueAt handle: UInt16) -> ATTErrorCode? { nil }
    public func server(_ server: GATTServer, didChangeClientConfiguration configuration: ClientConfiguration,
                       forValueAt handle: UInt16) {}
    public func server(_ server: GATTServer, didConfirmIndicationAt handle: UInt16) {}
    public func server(_ server: GATTServer, didChangeClientFeatures features: ClientSupportedFeatures) {}
    public func server(_ server: GATTServer, didExchangeMTU mtu: Int) {}
}

/// The server side of one ATT bearer, as a state machine: a request in, a response out.
/// It holds the per-connection state the spec puts on the bearer: the negotiated MTU, the
/// client's CCCD values, the prepared-write queue and the one indication that may be
/// outstanding. It does no I/O and reads no clock; the bearer that owns it sends what it
/// returns and runs the 30 s indication timeout.
///
/// Every request gets exactly one response or one Error Response; every malformed command
/// is dropped (Vol 3, Part F, 3.3 and 3.4.9). Nothing a client sends can crash it.
public final class GATTServer {
    public let database: GATTDatabase
    public weak var delegate: (any GATTServerDelegate)?
    public var security: LinkSecurity

    /// Our receive MTU, offered in Exchange MTU; capped by the bearer's capacity.
    public let preferredMTU: Int
    /// The ATT_MTU in force on this bearer (23 until exchanged).
    public private(set) var mtu: Int = ATTLimits.minimumMTU
    public internal(set) var clientConfigurations: [UInt16: ClientConfiguration] = [:]
    /// Whether an indication is waiting for its confirmation (only one may be, 3.4.7.2).
    public var indicationPending: Bool { indicatedHandle != nil }
    /// The value handle of the indication waiting for its confirmation.
    public internal(set) var indicatedHandle: UInt16?

    /// This client's Client Supported Features (Vol 3 Part G 7.2), kept per bearer.
    public internal(set) var clientFeatures: ClientSupportedFeatures = []
    /// Whether the client knows the database as it now is (2.5.2.1). `markChangeUnaware()`
    /// clears it when the database changes under a connected client
    /// (GATTServer+RobustCaching.swift).
    public internal(set) var isChangeAware = true
    /// A Database Out Of Sync error went to this change-unaware client: its next request
    /// makes it change-aware (2.5.2.1).
    var outOfSyncReported = false

    /// Prepared writes, in arrival order (Vol 3, Part F, 3.4.6.1).
    var prepareQueue: [(handle: UInt16, offset: UInt16, value: [UInt8])] = []
    /// Prepared writes queued at most. The spec leaves the size to the server; this is enough
    /// for the largest attribute (512 octets) in MTU-23 pieces of 18 octets (29), rounded up.
    public static let maximumPrepareQueueLength = 32

    public init(database: GATTDatabase, preferredMTU: Int = 247, security: LinkSecurity = .none) {
        self.database = database
        // The Exchange MTU Response carries the MTU in 16 bits (3.4.2.2).
        self.preferredMTU = min(max(ATTLimits.minimumMTU, preferredMTU), Int(UInt16.max))
        self.security = security
    }

    // MARK: Input

    /// Handles one client-to-server PDU. Returns the bytes to send back, if any.
    public func handle(_ bytes: ATTBytes) -> [UInt8]? {
        var out: [UInt8] = []
        return handle(bytes, into: &out) ? out : nil
    }

    /// Same, writing the answer into `out` (emptied first, its capacity kept): a caller that
    /// reuses one buffer pays no allocation per answer. Returns whether there is an answer.
    /// The fuzz target serves every PDU this way: one answer buffer per input instead of one
    /// allocation per PDU, which was two thirds of its allocations.
    public func handle(_ bytes: ATTBytes, into out: inout [UInt8]) -> Bool {
        out.removeAll(keepingCapacity: true)
        guard let response = respond(to: bytes) else { return false }
        out.reserveCapacity(response.encodedLength)
        response.encode(into: &out)
        return true
    }

    /// Same, returning the PDU instead of its bytes (for tests and tracing).
    public func respond(to bytes: ATTBytes) -> ATTPDU? {
        // No PDU may exceed ATT_MTU (Vol 3, Part F, 3.2.8). A longer request is invalid, and
        // its answer might not fit either (a Prepare Write Response echoes the value). Found
        // by Tests/fuzz (fuzz-gatt-server); regression test in GATTServerMalformedTests.
        if bytes.count > mtu, let first = bytes.first {
            let op = ATTOpcode(rawValue: first)
            if op.isCommand || op.isServerToClient || op == .handleValueConfirmation { return nil }
            return .errorResponse(request: op, handle: 0, error: .invalidPDU)
        }
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU(decoding: bytes)
        } catch {
            guard let first = bytes.first else { return nil }
            let op = ATTOpcode(rawValue: first)
            // A command (bit 6) is never answered, not even with an error (3.3.1).
            if op.isCommand { return nil }
            switch error {
            case .unknownOpcode:
                return .errorResponse(request: op, handle: 0, error: .requestNotSupported)
            case .invalidLength, .invalidField, .empty:
                // Responses, notifications and confirmations arriving malformed are not
                // requests: there is nothing to answer.
                if op.isServerToClient || op == .handleValueConfirmation { return nil }
                return .errorResponse(request: op, handle: 0, error: .invalidPDU)
            }
        }
        return respond(to: pdu)
    }

    public func respond(to pdu: ATTPDU) -> ATTPDU? {
        switch robustCachingGate(pdu) {
        case .pass: break
        case .drop: return nil
        case .refuse(let error): return error
        }
        switch pdu {
        case .exchangeMTURequest(let clientMTU):
            // 3.4.2.2: the ATT_MTU is the minimum of both Rx MTUs, never below 23.
            mtu = max(ATTLimits.minimumMTU, min(Int(clientMTU), preferredMTU))
            delegate?.server(self, didExchangeMTU: mtu)
            return .exchangeMTUResponse(serverRxMTU: UInt16(preferredMTU))
        case .findInformationRequest(let start, let end):
            return findInformation(start, end)
        case .findByTypeValueRequest(let start, let end, let type, let value):
            return findByTypeValue(start, end, type, value)
        case .readByTypeRequest(let start, let end, let type):
            return readByType(start, end, type)
        case .readByGroupTypeRequest(let start, let end, let type):
            return readByGroupType(start, end, type)
        case .readRequest(let handle):
            switch readValue(handle) {
            case .success(let v): return .readResponse(value: v.prefix(mtu - 1))
            case .failure(let e): return .errorResponse(request: .readRequest, handle: handle, error: e)
            }
        case .readBlobRequest(let handle, let offset):
            switch readValue(handle) {
            case .success(let v):
                guard Int(offset) <= v.count else {
                    return .errorResponse(request: .readBlobRequest, handle: handle, error: .invalidOffset)
                }
                return .readBlobResponse(value: v[Int(offset)...].prefix(mtu - 1))
            case .failure(let e): return .errorResponse(request: .readBlobRequest, handle: handle, error: e)
            }
        case .readMultipleRequest(let handles):
            // Every handle is read (any failure is the answer), but only what fits is kept.
            var out: [UInt8] = []
            out.reserveCapacity(mtu - 1)
            for h in handles {
                switch readValue(h) {
                case .success(let v): out += v.prefix(mtu - 1 - out.count)
                case .failure(let e): return .errorResponse(request: .readMultipleRequest, handle: h, error: e)
                }
            }
            return .readMultipleResponse(values: out[...])
        case .writeRequest(let handle, let value):
            if let e = write(value, at: handle, withResponse: true) {
                return .errorResponse(request: .writeRequest, handle: handle, error: e)
            }
            return .writeResponse
        case .writeCommand(let handle, let value):
            _ = write(value, at: handle, withResponse: false)
            return nil
        case .signedWriteCommand:
            // We hold no CSRK, so no signature can be verified: drop, as for any failed command.
            return nil
        case .prepareWriteRequest(let handle, let offset, let value):
            return prepareWrite(handle, offset, value)
        case .executeWriteRequest(let flags):
            return executeWrite(flags)
        case .handleValueConfirmation:
            confirmationReceived()
            return nil
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
             .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse, .readByGroupTypeResponse,
             .writeResponse, .prepareWriteResponse, .executeWriteResponse, .handleValueNotification,
             .handleValueIndication:
            // Server-to-client PDUs belong to the client half of the bearer.
            return nil
        }
    }

    // MARK: Output

    public enum ValueUpdateError: Error, Equatable {
        case notSubscribed
        case tooLong(maximum: Int)
        case indicationInFlight
    }

    /// A notification for a subscribed client. The value must fit in one PDU (MTU − 3);
    /// larger values go through `ChunkedSender`.
    public func notification(_ value: [UInt8], forValueAt handle: UInt16) -> Result<[UInt8], ValueUpdateError> {
        guard clientConfigurations[handle, default: []].contains(.notify) else { return .failure(.notSubscribed) }
        guard value.count <= mtu - 3 else { return .failure(.tooLong(maximum: mtu - 3)) }
        return .success(ATTPDU.handleValueNotification(handle: handle, value: value[...]).bytes)
    }

    /// An indication; only one may await its confirmation.
    public func indication(_ value: [UInt8], forValueAt handle: UInt16) -> Result<[UInt8], ValueUpdateError> {
        guard clientConfigurations[handle, default: []].contains(.indicate) else { return .failure(.notSubscribed) }
        guard !indicationPending else { return .failure(.indicationInFlight) }
        guard value.count <= mtu - 3 else { return .failure(.tooLong(maximum: mtu - 3)) }
        indicatedHandle = handle
        return .success(ATTPDU.handleValueIndication(handle: handle, value: value[...]).bytes)
    }

    /// Takes over the ATT MTU a client negotiated earlier on this bearer (an agent that adopts
    /// a link after a restart: the client will not exchange again, 3.4.2.1). Clamped to at
    /// least 23 and at most our preferred MTU.
    public func restoreMTU(_ negotiated: Int) {
        mtu = max(ATTLimits.minimumMTU, min(preferredMTU, negotiated))
    }

    /// The indication sent last never left (the link refused it): no confirmation will come,
    /// so another may be sent.
    public func cancelIndication() { indicatedHandle = nil }

    /// Drops the CCCD values of value handles in `range` but `except` (their handles may now
    /// belong to other attributes).
    public func forgetClientConfigurations(in range: ClosedRange<UInt16>, except: UInt16? = nil) {
        clientConfigurations = clientConfigurations.filter { !range.contains($0.key) || $0.key == except }
    }

    /// Restores CCCD values remembered for a bonded client (or across an agent restart).
    public func restoreClientConfigurations(_ values: [UInt16: ClientConfiguration]) {
        for (h, v) in values {
            guard let a = database.attribute(at: h), case .characteristicValue = a.kind else { continue }
            clientConfigurations[h] = v
        }
    }
}
