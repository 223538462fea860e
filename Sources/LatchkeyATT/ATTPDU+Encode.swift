extension ATTPDU {
    /// The wire bytes. Callers keep values within the ATT MTU; the GATT layer truncates
    /// read values to MTU−1 and refuses notifications that do not fit.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedLength)
        encode(into: &out)
        return out
    }

    public func encode(into out: inout [UInt8]) {
        out.append(opcode.rawValue)
        switch self {
        case .errorResponse(let request, let handle, let error):
            out.append(request.rawValue); out.appendLE(handle); out.append(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            out.appendLE(mtu)
        case .findInformationRequest(let start, let end):
            out.appendLE(start); out.appendLE(end)
        case .findInformationResponse(let list):
            out.append(list.format); out += list.raw
        case .findByTypeValueRequest(let start, let end, let type, let value):
            out.appendLE(start); out.appendLE(end); out.appendLE(type); out += value
        case .findByTypeValueResponse(let list):
            out += list.raw
        case .readByTypeRequest(let start, let end, let type), .readByGroupTypeRequest(let start, let end, let type):
            out.appendLE(start); out.appendLE(end); type.append(to: &out)
        case .readByTypeResponse(let list):
            out.append(UInt8(list.entryLength)); out += list.raw
        case .readByGroupTypeResponse(let list):
            out.append(UInt8(list.entryLength)); out += list.raw
        case .readRequest(let handle):
            out.appendLE(handle)
        case .readResponse(let value), .readBlobResponse(let value), .readMultipleResponse(let value):
            out += value
        case .readBlobRequest(let handle, let offset):
            out.appendLE(handle); out.appendLE(offset)
        case .readMultipleRequest(let handles):
            out += handles.raw
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
             .handleValueNotification(let handle, let value), .handleValueIndication(let handle, let value):
            out.appendLE(handle); out += value
        case .signedWriteCommand(let handle, let value, let signature):
            out.appendLE(handle); out += value; out += signature
        case .prepareWriteRequest(let handle, let offset, let value),
             .prepareWriteResponse(let handle, let offset, let value):
            out.appendLE(handle); out.appendLE(offset); out += value
        case .executeWriteRequest(let flags):
            out.append(flags.rawValue)
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            break
        }
    }

    /// Length on the wire, computed without encoding.
    public var encodedLength: Int {
        switch self {
        case .errorResponse: 5
        case .exchangeMTURequest, .exchangeMTUResponse, .readRequest: 3
        case .findInformationRequest, .readBlobRequest: 5
        case .findInformationResponse(let l): 2 + l.raw.count
        case .findByTypeValueRequest(_, _, _, let v): 7 + v.count
        case .findByTypeValueResponse(let l): 1 + l.raw.count
        case .readByTypeRequest(_, _, let t), .readByGroupTypeRequest(_, _, let t): 5 + t.wireLength
        case .readByTypeResponse(let l): 2 + l.raw.count
        case .readByGroupTypeResponse(let l): 2 + l.raw.count
        case .readResponse(let v), .readBlobResponse(let v), .readMultipleResponse(let v): 1 + v.count
        case .readMultipleRequest(let h): 1 + h.raw.count
        case .writeRequest(_, let v), .writeCommand(_, let v), .handleValueNotification(_, let v),
             .handleValueIndication(_, let v): 3 + v.count
        case .signedWriteCommand(_, let v, let sig): 3 + v.count + sig.count
        case .prepareWriteRequest(_, _, let v), .prepareWriteResponse(_, _, let v): 5 + v.count
        case .executeWriteRequest: 2
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation: 1
        }
    }
}
