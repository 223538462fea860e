import LatchkeyATT

/// Random, well-formed instances of every ATT PDU, for round-trip properties and fuzz seeds.
/// Sizes stay within what a 517-octet ATT_MTU carries.
public enum RandomPDU {
    /// Every opcode `ATTPDU` models, requests, responses, commands and server-initiated PDUs.
    public static let allOpcodes: [ATTOpcode] = [
        .errorResponse, .exchangeMTURequest, .exchangeMTUResponse, .findInformationRequest,
        .findInformationResponse, .findByTypeValueRequest, .findByTypeValueResponse, .readByTypeRequest,
        .readByTypeResponse, .readRequest, .readResponse, .readBlobRequest, .readBlobResponse,
        .readMultipleRequest, .readMultipleResponse, .readByGroupTypeRequest, .readByGroupTypeResponse,
        .writeRequest, .writeResponse, .writeCommand, .signedWriteCommand, .prepareWriteRequest,
        .prepareWriteResponse, .executeWriteRequest, .executeWriteResponse, .handleValueNotification,
        .handleValueIndication, .handleValueConfirmation,
    ]

    public static func make<G: RandomNumberGenerator>(_ opcode: ATTOpcode, using g: inout G) -> ATTPDU {
        func u16() -> UInt16 { UInt16.random(in: .min ... .max, using: &g) }
        func bytes(_ range: ClosedRange<Int>) -> [UInt8] {
            (0..<Int.random(in: range, using: &g)).map { _ in UInt8.random(in: .min ... .max, using: &g) }
        }
        func count(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &g) }
        switch opcode {
        case .errorResponse:
            return .errorResponse(request: ATTOpcode(rawValue: UInt8.random(in: .min ... .max, using: &g)),
                                  handle: u16(), error: ATTErrorCode(rawValue: UInt8.random(in: .min ... .max, using: &g)))
        case .exchangeMTURequest: return .exchangeMTURequest(clientRxMTU: u16())
        case .exchangeMTUResponse: return .exchangeMTUResponse(serverRxMTU: u16())
        case .findInformationRequest: return .findInformationRequest(start: u16(), end: u16())
        case .findInformationResponse:
            let wide = Bool.random(using: &g)
            let n = count(1...(wide ? 28 : 128))
            return .findInformationResponse(FindInformationList((0..<n).map { _ in
                (u16(), wide ? uuid128(using: &g) : BluetoothUUID(u16()))
            }))
        case .findByTypeValueRequest:
            return .findByTypeValueRequest(start: u16(), end: u16(), type: u16(), value: bytes(0...510)[...])
        case .findByTypeValueResponse:
            return .findByTypeValueResponse(HandlesInformationList((0..<count(1...128)).map { _ in (u16(), u16()) }))
        case .readByTypeRequest: return .readByTypeRequest(start: u16(), end: u16(), type: uuid(using: &g))
        case .readByTypeResponse:
            let n = count(0...253)
            let entries = (0..<count(1...(514 / (2 + n)))).map { _ in (u16(), bytes(n...n)) }
            return .readByTypeResponse(AttributeDataList(entries))
        case .readRequest: return .readRequest(handle: u16())
        case .readResponse: return .readResponse(value: bytes(0...516)[...])
        case .readBlobRequest: return .readBlobRequest(handle: u16(), offset: u16())
        case .readBlobResponse: return .readBlobResponse(value: bytes(0...516)[...])
        case .readMultipleRequest: return .readMultipleRequest(handles: HandleList((0..<count(2...258)).map { _ in u16() }))
        case .readMultipleResponse: return .readMultipleResponse(values: bytes(0...516)[...])
        case .readByGroupTypeRequest: return .readByGroupTypeRequest(start: u16(), end: u16(), type: uuid(using: &g))
        case .readByGroupTypeResponse:
            let n = count(0...251)
            let entries = (0..<count(1...(514 / (4 + n)))).map { _ in (u16(), u16(), bytes(n...n)) }
            return .readByGroupTypeResponse(GroupDataList(entries))
        case .writeRequest: return .writeRequest(handle: u16(), value: bytes(0...514)[...])
        case .writeResponse: return .writeResponse
        case .writeCommand: return .writeCommand(handle: u16(), value: bytes(0...514)[...])
        case .signedWriteCommand:
            return .signedWriteCommand(handle: u16(), value: bytes(0...502)[...], signature: bytes(12...12)[...])
        case .prepareWriteRequest: return .prepareWriteRequest(handle: u16(), offset: u16(), value: bytes(0...512)[...])
        case .prepareWriteResponse: return .prepareWriteResponse(handle: u16(), offset: u16(), value: bytes(0...512)[...])
        case .executeWriteRequest: return .executeWriteRequest(flags: Bool.random(using: &g) ? .write : .cancel)
        case .executeWriteResponse: return .executeWriteResponse
        case .handleValueNotification: return .handleValueNotification(handle: u16(), value: bytes(0...514)[...])
        case .handleValueIndication: return .handleValueIndication(handle: u16(), value: bytes(0...514)[...])
        case .handleValueConfirmation: return .handleValueConfirmation
        default:
            preconditionFailure("no generator for \(opcode)")
        }
    }

    /// A 16- or 128-bit UUID, each half the time.
    public static func uuid<G: RandomNumberGenerator>(using g: inout G) -> BluetoothUUID {
        Bool.random(using: &g) ? BluetoothUUID(UInt16.random(in: .min ... .max, using: &g)) : uuid128(using: &g)
    }

    /// A 128-bit UUID that is not built on the Bluetooth Base UUID (so it stays 128-bit).
    public static func uuid128<G: RandomNumberGenerator>(using g: inout G) -> BluetoothUUID {
        while true {
            let u = BluetoothUUID(value: UInt128.random(in: .min ... .max, using: &g))
            if u.wireLength == 16 { return u }
        }
    }
}
