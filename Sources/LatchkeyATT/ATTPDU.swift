/// Bytes of a PDU field. Decoding slices the received buffer instead of copying, so the
/// decode path does not allocate (an `ArraySlice` shares its base array's storage).
public typealias ATTBytes = ArraySlice<UInt8>

/// Every ATT PDU a GATT server and client exchange (Core Spec v5.4, Vol 3, Part F, 3.4).
///
/// Lists inside responses stay in their wire form (`ATTList` views) so decoding a
/// response is as cheap as decoding a request; builders make them for encoding.
public enum ATTPDU: Equatable, Sendable {
    case errorResponse(request: ATTOpcode, handle: UInt16, error: ATTErrorCode)
    case exchangeMTURequest(clientRxMTU: UInt16)
    case exchangeMTUResponse(serverRxMTU: UInt16)
    case findInformationRequest(start: UInt16, end: UInt16)
    case findInformationResponse(FindInformationList)
    case findByTypeValueRequest(start: UInt16, end: UInt16, type: UInt16, value: ATTBytes)
    case findByTypeValueResponse(HandlesInformationList)
    case readByTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID)
    case readByTypeResponse(AttributeDataList)
    case readRequest(handle: UInt16)
    case readResponse(value: ATTBytes)
    case readBlobRequest(handle: UInt16, offset: UInt16)
    case readBlobResponse(value: ATTBytes)
    case readMultipleRequest(handles: HandleList)
    case readMultipleResponse(values: ATTBytes)
    case readByGroupTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID)
    case readByGroupTypeResponse(GroupDataList)
    case writeRequest(handle: UInt16, value: ATTBytes)
    case writeResponse
    case writeCommand(handle: UInt16, value: ATTBytes)
    /// The 12-byte signature is carried, not checked: LE signing needs a CSRK we do not hold.
    case signedWriteCommand(handle: UInt16, value: ATTBytes, signature: ATTBytes)
    case prepareWriteRequest(handle: UInt16, offset: UInt16, value: ATTBytes)
    case prepareWriteResponse(handle: UInt16, offset: UInt16, value: ATTBytes)
    case executeWriteRequest(flags: ExecuteWriteFlags)
    case executeWriteResponse
    case handleValueNotification(handle: UInt16, value: ATTBytes)
    case handleValueIndication(handle: UInt16, value: ATTBytes)
    case handleValueConfirmation

    public var opcode: ATTOpcode {
        switch self {
        case .errorResponse: .errorResponse
        case .exchangeMTURequest: .exchangeMTURequest
        case .exchangeMTUResponse: .exchangeMTUResponse
        case .findInformationRequest: .findInformationRequest
        case .findInformationResponse: .findInformationResponse
        case .findByTypeValueRequest: .findByTypeValueRequest
        case .findByTypeValueResponse: .findByTypeValueResponse
        case .readByTypeRequest: .readByTypeRequest
        case .readByTypeResponse: .readByTypeResponse
        case .readRequest: .readRequest
        case .readResponse: .readResponse
        case .readBlobRequest: .readBlobRequest
        case .readBlobResponse: .readBlobResponse
        case .readMultipleRequest: .readMultipleRequest
        case .readMultipleResponse: .readMultipleResponse
        case .readByGroupTypeRequest: .readByGroupTypeRequest
        case .readByGroupTypeResponse: .readByGroupTypeResponse
        case .writeRequest: .writeRequest
        case .writeResponse: .writeResponse
        case .writeCommand: .writeCommand
        case .signedWriteCommand: .signedWriteCommand
        case .prepareWriteRequest: .prepareWriteRequest
        case .prepareWriteResponse: .prepareWriteResponse
        case .executeWriteRequest: .executeWriteRequest
        case .executeWriteResponse: .executeWriteResponse
        case .handleValueNotification: .handleValueNotification
        case .handleValueIndication: .handleValueIndication
        case .handleValueConfirmation: .handleValueConfirmation
        }
    }
}

/// Execute Write Request flags (3.4.6.3): 0x00 cancels all prepared writes, 0x01 writes them.
public enum ExecuteWriteFlags: UInt8, Sendable {
    case cancel = 0x00
    case write = 0x01
}

/// The ways a buffer fails to be an ATT PDU. The server turns these into Error Responses
/// (Invalid PDU, Request Not Supported) or drops the PDU where the spec says so.
public enum ATTDecodeError: Error, Equatable, Sendable {
    case empty
    case unknownOpcode(UInt8)
    /// Wrong length (or inconsistent list length) for this opcode.
    case invalidLength(ATTOpcode)
    /// A field holds a value the spec reserves (e.g. an Execute Write flag other than 0/1).
    case invalidField(ATTOpcode)

    /// The opcode the failing PDU carried, if it was recognised.
    public var opcode: ATTOpcode? {
        switch self {
        case .empty, .unknownOpcode: nil
        case .invalidLength(let o), .invalidField(let o): o
        }
    }
}
