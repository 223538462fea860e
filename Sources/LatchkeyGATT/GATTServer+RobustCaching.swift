import LatchkeyATT

// The Generic Attribute service's server side (Vol 3 Part G 2.5.2, 7.1–7.3): the Service
// Changed indication, the per-client Client Supported Features, the Database Hash, and
// Robust Caching — a change-unaware client that asked for it gets Database Out Of Sync
// instead of an answer read from handles that no longer mean what its cache says.
extension GATTServer {
    enum Gate {
        case pass
        /// A command from a change-unaware client: ignored (2.5.2.1).
        case drop
        case refuse(ATTPDU)
    }

    /// What a change-unaware client with Robust Caching may do (2.5.2.1, after Android's
    /// server): exchange the MTU, execute or cancel its prepared writes, confirm, and read
    /// the Database Hash, which makes it change-aware. Its first other request is refused with
    /// Database Out Of Sync; the request after that is served, and it is change-aware again.
    func robustCachingGate(_ pdu: ATTPDU) -> Gate {
        guard !isChangeAware, clientFeatures.contains(.robustCaching) else { return .pass }
        switch pdu {
        case .exchangeMTURequest, .executeWriteRequest, .handleValueConfirmation:
            return .pass
        case .readByTypeRequest(_, _, let type) where type == .databaseHash:
            isChangeAware = true
            return .pass
        case .readRequest(let h) where database.attribute(at: h)?.type == .databaseHash:
            isChangeAware = true
            return .pass
        case .writeCommand, .signedWriteCommand:
            return .drop
        // Refused for its form alone (Invalid Handle), which says nothing about the database:
        // a relaunched client's barrier (`GATTClient.synchronize`) gets its answer, and the
        // client is still change-unaware after it. One `where` per pattern: a `where` after
        // several patterns applies to the last one only, which once let every Find
        // Information and Find By Type Value through.
        case .findInformationRequest(let start, let end) where Self.isInvalidRange(start, end),
             .findByTypeValueRequest(let start, let end, _, _) where Self.isInvalidRange(start, end),
             .readByTypeRequest(let start, let end, _) where Self.isInvalidRange(start, end),
             .readByGroupTypeRequest(let start, let end, _) where Self.isInvalidRange(start, end):
            return .pass
        default:
            guard pdu.opcode.isRequest else { return .pass }  // responses, notifications: not ours
            if outOfSyncReported {
                isChangeAware = true
                return .pass
            }
            outOfSyncReported = true
            return .refuse(.errorResponse(request: pdu.opcode, handle: 0, error: .databaseOutOfSync))
        }
    }

    /// The database changed under this client: it no longer knows it (2.5.2.1).
    public func markChangeUnaware() {
        isChangeAware = false
        outOfSyncReported = false
    }

    /// The value handle of the Service Changed characteristic, when the database has one.
    public var serviceChangedHandle: UInt16? {
        database.attributes.first { a in
            if case .characteristicValue = a.kind { return a.type == .serviceChanged }
            return false
        }?.handle
    }

    /// A Service Changed indication naming `range`, for a client that enabled indications
    /// on it; its confirmation makes the client change-aware.
    public func serviceChangedIndication(_ range: ClosedRange<UInt16>) -> Result<[UInt8], ValueUpdateError> {
        guard let handle = serviceChangedHandle else { return .failure(.notSubscribed) }
        return indication(ServiceChangedRange(range).bytes, forValueAt: handle)
    }

    /// Whether this client asked for Service Changed indications.
    public var wantsServiceChanged: Bool {
        guard let handle = serviceChangedHandle else { return false }
        return clientConfigurations[handle, default: []].contains(.indicate)
    }

    func confirmationReceived() {
        guard let handle = indicatedHandle else { return }  // unsolicited: nothing to confirm
        indicatedHandle = nil
        if handle == serviceChangedHandle { isChangeAware = true }
        delegate?.server(self, didConfirmIndicationAt: handle)
    }

    /// Restores the features a client set earlier on this bearer (an agent that adopts a
    /// link after a restart).
    public func restoreClientFeatures(_ features: ClientSupportedFeatures) {
        clientFeatures = features.intersection(.supported)
    }

    /// A write to Client Supported Features: the bits this server knows are kept; a client
    /// may not clear a bit it set (7.2: Value Not Allowed).
    func writeClientFeatures(_ value: ATTBytes) -> ATTErrorCode? {
        guard let first = value.first else { return .invalidAttributeValueLength }
        let written = ClientSupportedFeatures(rawValue: first)
        guard written.isSuperset(of: clientFeatures) else { return .valueNotAllowed }
        let kept = written.intersection(.supported)
        guard kept != clientFeatures else { return nil }
        clientFeatures = kept
        delegate?.server(self, didChangeClientFeatures: kept)
        return nil
    }
}
