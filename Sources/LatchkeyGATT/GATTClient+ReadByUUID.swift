import LatchkeyATT

extension GATTClient {
    /// Read Using Characteristic UUID (Vol 3 Part G 4.8.2): one Read By Type Request over
    /// `range`, answered with the values of the attributes of that type the server has,
    /// without knowing their handles — how a client reads the Database Hash before it
    /// trusts any cached handle (2.5.2.1). The values of the first response only; none when
    /// the server has no such attribute (Attribute Not Found).
    public func read(using type: BluetoothUUID, in range: ClosedRange<UInt16> = 0x0001...0xFFFF,
                     _ completion: @escaping (Result<[(handle: UInt16, value: [UInt8])], GATTClientError>) -> Void) {
        var found: [(handle: UInt16, value: [UInt8])] = []
        submit(Procedure(
            start: { _ in .send(.readByTypeRequest(start: range.lowerBound, end: range.upperBound, type: type)) },
            onResponse: { p, pdu, _ in
                switch pdu {
                case .readByTypeResponse(let list):
                    for e in list {
                        guard range.contains(e.handle) else {
                            p.fail(.invalidResponse("handle outside the range read")); return .done
                        }
                        found.append((e.handle, Array(e.value)))
                    }
                    return .done
                case .errorResponse(_, _, .attributeNotFound):
                    return .done
                default:
                    return p.unexpected(pdu)
                }
            },
            finish: { e in completion(e.map { .failure($0) } ?? .success(found)) }))
    }
}
