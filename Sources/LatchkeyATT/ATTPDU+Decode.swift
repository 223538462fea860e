extension ATTPDU {
    /// Decodes one PDU. Lengths are checked first, exactly as the spec fixes them for each
    /// opcode; nothing is copied out of `bytes` (fields are slices of it).
    public init(decoding bytes: ATTBytes) throws(ATTDecodeError) {
        guard let first = bytes.first else { throw .empty }
        let op = ATTOpcode(rawValue: first)
        let s = bytes.startIndex
        let n = bytes.count
        @inline(__always) func u16(_ offset: Int) -> UInt16 { bytes.readLE16(at: s + offset) }
        @inline(__always) func tail(_ offset: Int) -> ATTBytes { bytes[(s + offset)...] }
        @inline(__always) func need(_ ok: Bool) throws(ATTDecodeError) { if !ok { throw .invalidLength(op) } }
        func uuid(_ offset: Int) throws(ATTDecodeError) -> BluetoothUUID {
            guard let u = BluetoothUUID(littleEndian: tail(offset)) else { throw .invalidLength(op) }
            return u
        }

        switch op {
        case .errorResponse:
            try need(n == 5)
            self = .errorResponse(request: ATTOpcode(rawValue: bytes[s + 1]), handle: u16(2),
                                  error: ATTErrorCode(rawValue: bytes[s + 4]))
        case .exchangeMTURequest:
            try need(n == 3)
            self = .exchangeMTURequest(clientRxMTU: u16(1))
        case .exchangeMTUResponse:
            try need(n == 3)
            self = .exchangeMTUResponse(serverRxMTU: u16(1))
        case .findInformationRequest:
            try need(n == 5)
            self = .findInformationRequest(start: u16(1), end: u16(3))
        case .findInformationResponse:
            try need(n >= 2)
            guard let list = FindInformationList(format: bytes[s + 1], raw: tail(2)) else { throw .invalidLength(op) }
            self = .findInformationResponse(list)
        case .findByTypeValueRequest:
            try need(n >= 7)
            self = .findByTypeValueRequest(start: u16(1), end: u16(3), type: u16(5), value: tail(7))
        case .findByTypeValueResponse:
            guard let list = HandlesInformationList(raw: tail(1)) else { throw .invalidLength(op) }
            self = .findByTypeValueResponse(list)
        case .readByTypeRequest:
            try need(n == 7 || n == 21)
            self = .readByTypeRequest(start: u16(1), end: u16(3), type: try uuid(5))
        case .readByTypeResponse:
            try need(n >= 2)
            guard let list = AttributeDataList(entryLength: Int(bytes[s + 1]), raw: tail(2)) else {
                throw .invalidLength(op)
            }
            self = .readByTypeResponse(list)
        case .readRequest:
            try need(n == 3)
            self = .readRequest(handle: u16(1))
        case .readResponse:
            self = .readResponse(value: tail(1))
        case .readBlobRequest:
            try need(n == 5)
            self = .readBlobRequest(handle: u16(1), offset: u16(3))
        case .readBlobResponse:
            self = .readBlobResponse(value: tail(1))
        case .readMultipleRequest:
            guard let list = HandleList(raw: tail(1)) else { throw .invalidLength(op) }
            self = .readMultipleRequest(handles: list)
        case .readMultipleResponse:
            self = .readMultipleResponse(values: tail(1))
        case .readByGroupTypeRequest:
            try need(n == 7 || n == 21)
            self = .readByGroupTypeRequest(start: u16(1), end: u16(3), type: try uuid(5))
        case .readByGroupTypeResponse:
            try need(n >= 2)
            guard let list = GroupDataList(entryLength: Int(bytes[s + 1]), raw: tail(2)) else {
                throw .invalidLength(op)
            }
            self = .readByGroupTypeResponse(list)
        case .writeRequest:
            try need(n >= 3)
            self = .writeRequest(handle: u16(1), value: tail(3))
        case .writeResponse:
            try need(n == 1)
            self = .writeResponse
        case .writeCommand:
            try need(n >= 3)
            self = .writeCommand(handle: u16(1), value: tail(3))
        case .signedWriteCommand:
            try need(n >= 15)
            self = .signedWriteCommand(handle: u16(1), value: bytes[(s + 3)..<(s + n - 12)],
                                       signature: bytes[(s + n - 12)...])
        case .prepareWriteRequest:
            try need(n >= 5)
            self = .prepareWriteRequest(handle: u16(1), offset: u16(3), value: tail(5))
        case .prepareWriteResponse:
            try need(n >= 5)
            self = .prepareWriteResponse(handle: u16(1), offset: u16(3), value: tail(5))
        case .executeWriteRequest:
            try need(n == 2)
            guard let flags = ExecuteWriteFlags(rawValue: bytes[s + 1]) else { throw .invalidField(op) }
            self = .executeWriteRequest(flags: flags)
        case .executeWriteResponse:
            try need(n == 1)
            self = .executeWriteResponse
        case .handleValueNotification:
            try need(n >= 3)
            self = .handleValueNotification(handle: u16(1), value: tail(3))
        case .handleValueIndication:
            try need(n >= 3)
            self = .handleValueIndication(handle: u16(1), value: tail(3))
        case .handleValueConfirmation:
            try need(n == 1)
            self = .handleValueConfirmation
        default:
            throw .unknownOpcode(first)
        }
    }

    public init(decoding bytes: [UInt8]) throws(ATTDecodeError) {
        try self.init(decoding: bytes[...])
    }
}
