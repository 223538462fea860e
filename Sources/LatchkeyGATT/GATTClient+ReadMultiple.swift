import LatchkeyATT

extension GATTClient {
    /// Read Multiple Characteristic Values (Vol 3 Part G 4.8.4): one Read Multiple Request,
    /// answered with the values of `handles` one after the other, cut at ATT_MTU − 1. Only
    /// the last value may vary in length (Vol 3 Part F 3.4.4.7): the caller splits the
    /// answer by the lengths it knows. One round trip where reads one by one cost one each.
    public func readMultiple(_ handles: [UInt16], _ completion: @escaping (Result<[UInt8], GATTClientError>) -> Void) {
        precondition(handles.count >= 2, "Read Multiple names at least two handles")
        var values: [UInt8] = []
        submit(Procedure(
            start: { _ in .send(.readMultipleRequest(handles: HandleList(handles))) },
            onResponse: { p, pdu, _ in
                guard case .readMultipleResponse(let v) = pdu else { return p.unexpected(pdu) }
                values = Array(v)
                return .done
            },
            finish: { e in completion(e.map { .failure($0) } ?? .success(values)) }))
    }
}
