import LatchkeyATT

/// One GATT procedure in flight: how it starts, how it consumes each response, and how it
/// reports. Its state lives in the closures' captures.
final class Procedure {
    enum Step { case send(ATTPDU), done }
    var requestOpcode: ATTOpcode = .errorResponse
    /// Set for a barrier: responses it does not match are another transaction's, dropped.
    var matches: ((ATTPDU) -> Bool)?
    private let startStep: (Int) -> Step
    private let onResponse: (Procedure, ATTPDU, Int) -> Step
    private let finish: (GATTClientError?) -> Void
    private(set) var error: GATTClientError?

    init(start: @escaping (Int) -> Step, onResponse: @escaping (Procedure, ATTPDU, Int) -> Step,
         finish: @escaping (GATTClientError?) -> Void) {
        self.startStep = start; self.onResponse = onResponse; self.finish = finish
    }

    func start(mtu: Int) -> Step { startStep(mtu) }
    func handle(_ pdu: ATTPDU, mtu: Int) -> Step { onResponse(self, pdu, mtu) }
    func fail(_ e: GATTClientError) { if error == nil { error = e } }
    func complete() { finish(error) }

    /// Fails with the server's error, or with "invalid response" for anything unexpected.
    func unexpected(_ pdu: ATTPDU) -> Step {
        if case .errorResponse(_, let h, let e) = pdu { fail(.att(e, handle: h)) }
        else { fail(.invalidResponse("unexpected \(pdu.opcode)")) }
        return .done
    }
}

extension GATTClient {
    /// A barrier for a bearer this client took over from another process: that process's last
    /// request may still be answered, and ATT responses name no transaction. It sends a Find
    /// Information Request with a reversed range (start `nonce`, end `nonce` − 1), which a server
    /// must refuse with Invalid Handle naming `nonce` (Vol 3 Part F 3.4.3.1), and drops every
    /// response until that exact Error Response. `nonce` should differ between adoptions, so a
    /// barrier left by a process that died in its own barrier does not end this one.
    public func synchronize(nonce: UInt16, _ completion: @escaping (Result<Void, GATTClientError>) -> Void) {
        let start = max(1, nonce)
        let barrier = Procedure(
            start: { _ in .send(.findInformationRequest(start: start, end: start - 1)) },
            onResponse: { _, _, _ in .done },
            finish: { e in completion(e.map { .failure($0) } ?? .success(())) })
        barrier.matches = { pdu in
            if case .errorResponse(.findInformationRequest, start, _) = pdu { return true }
            return false
        }
        submit(barrier)
    }

    /// Exchange MTU (4.3.1). The new MTU applies once the response arrives.
    public func exchangeMTU(_ completion: @escaping (Result<Int, GATTClientError>) -> Void) {
        submit(Procedure(
            start: { [preferredMTU] _ in .send(.exchangeMTURequest(clientRxMTU: UInt16(preferredMTU))) },
            onResponse: { p, pdu, _ in
                if case .exchangeMTUResponse = pdu { return .done }
                return p.unexpected(pdu)
            },
            finish: { [unowned self] e in completion(e.map { .failure($0) } ?? .success(self.mtu)) }))
    }

    /// Discover All Primary Services (4.4.1), or by UUID with Find By Type Value (4.4.2).
    ///
    /// Every entry must lie at or after the handle the request started from, so a server
    /// that repeats itself cannot keep the procedure asking for the same page forever.
    /// `firstOnly`: the procedure ends with the first service found, for one a server
    /// publishes once at most, such as Generic Attribute (Vol 3 Part G 7): no request asks
    /// for the rest of the database.
    public func discoverPrimaryServices(_ uuid: BluetoothUUID? = nil, firstOnly: Bool = false,
                                        _ completion: @escaping (Result<[DiscoveredService], GATTClientError>) -> Void) {
        var found: [DiscoveredService] = []
        var from: UInt16 = 0x0001
        func request() -> ATTPDU {
            if let uuid {
                return .findByTypeValueRequest(start: from, end: 0xFFFF, type: 0x2800, value: uuid.littleEndianBytes[...])
            }
            return .readByGroupTypeRequest(start: from, end: 0xFFFF, type: .primaryService)
        }
        submit(Procedure(
            start: { _ in .send(request()) },
            onResponse: { p, pdu, _ in
                var last = Int(from) - 1
                switch pdu {
                case .readByGroupTypeResponse(let list) where uuid == nil:
                    for e in list {
                        guard let u = BluetoothUUID(littleEndian: e.value), e.groupEnd >= e.handle, Int(e.handle) > last else {
                            p.fail(.invalidResponse("bad service entry")); return .done
                        }
                        found.append(DiscoveredService(uuid: u, startHandle: e.handle, endHandle: e.groupEnd))
                        last = Int(e.groupEnd)
                    }
                case .findByTypeValueResponse(let list) where uuid != nil:
                    for e in list {
                        guard e.groupEnd >= e.found, Int(e.found) > last else {
                            p.fail(.invalidResponse("bad handle range")); return .done
                        }
                        found.append(DiscoveredService(uuid: uuid!, startHandle: e.found, endHandle: e.groupEnd))
                        last = Int(e.groupEnd)
                    }
                case .errorResponse(_, _, .attributeNotFound):
                    return .done  // the end of the database
                default:
                    return p.unexpected(pdu)
                }
                if firstOnly, !found.isEmpty {
                    found.removeSubrange(1...)
                    return .done
                }
                guard last < 0xFFFF else { return .done }
                from = UInt16(last + 1)
                return .send(request())
            },
            finish: { e in completion(e.map { .failure($0) } ?? .success(found)) }))
    }

    /// Discover All Characteristics of a Service (4.6.1). `enough`: asked after each response
    /// with what was found so far; true ends the procedure there, before the service's end —
    /// the last characteristic's `endHandle` is then only the service's end, an upper bound.
    public func discoverCharacteristics(of service: DiscoveredService,
                                        until enough: (([DiscoveredCharacteristic]) -> Bool)? = nil,
                                        _ completion: @escaping (Result<[DiscoveredCharacteristic], GATTClientError>) -> Void) {
        var found: [DiscoveredCharacteristic] = []
        let end = service.endHandle
        var from = service.startHandle
        func request(_ start: UInt16) -> ATTPDU {
            from = start
            return .readByTypeRequest(start: start, end: end, type: .characteristic)
        }
        submit(Procedure(
            start: { _ in service.startHandle < end ? .send(request(service.startHandle)) : .done },
            onResponse: { p, pdu, _ in
                var last = Int(from) - 1
                switch pdu {
                case .readByTypeResponse(let list):
                    for e in list {
                        // Declaration value: properties (1), value handle (2), UUID (2 or 16).
                        let v = e.value
                        guard v.count == 5 || v.count == 19, Int(e.handle) > last, e.handle <= end,
                              let u = BluetoothUUID(littleEndian: v.dropFirst(3)) else {
                            p.fail(.invalidResponse("bad characteristic declaration")); return .done
                        }
                        let valueHandle = UInt16(v[v.startIndex + 1]) | UInt16(v[v.startIndex + 2]) << 8
                        found.append(DiscoveredCharacteristic(
                            uuid: u, properties: CharacteristicProperties(rawValue: v[v.startIndex]),
                            declarationHandle: e.handle, valueHandle: valueHandle, endHandle: end))
                        last = Int(e.handle)
                    }
                case .errorResponse(_, _, .attributeNotFound):
                    return .done
                default:
                    return p.unexpected(pdu)
                }
                return last >= Int(end) || enough?(found) == true ? .done : .send(request(UInt16(last + 1)))
            },
            finish: { e in
                // Each characteristic's range ends where the next declaration starts.
                for i in found.indices.dropLast() { found[i].endHandle = found[i + 1].declarationHandle - 1 }
                completion(e.map { .failure($0) } ?? .success(found))
            }))
    }

    /// Discover All Characteristic Descriptors (4.7.1).
    public func discoverDescriptors(of characteristic: DiscoveredCharacteristic,
                                    _ completion: @escaping (Result<[DiscoveredDescriptor], GATTClientError>) -> Void) {
        var found: [DiscoveredDescriptor] = []
        let end = characteristic.endHandle
        var from = characteristic.valueHandle
        func request(_ start: UInt16) -> ATTPDU {
            from = start
            return .findInformationRequest(start: start, end: end)
        }
        submit(Procedure(
            start: { _ in characteristic.valueHandle < end ? .send(request(characteristic.valueHandle + 1)) : .done },
            onResponse: { p, pdu, _ in
                var last = Int(from) - 1
                switch pdu {
                case .findInformationResponse(let list):
                    for e in list {
                        guard Int(e.handle) > last, e.handle <= end else {
                            p.fail(.invalidResponse("handles out of order or out of range")); return .done
                        }
                        found.append(DiscoveredDescriptor(uuid: e.type, handle: e.handle))
                        last = Int(e.handle)
                    }
                case .errorResponse(_, _, .attributeNotFound):
                    return .done
                default:
                    return p.unexpected(pdu)
                }
                return last >= Int(end) ? .done : .send(request(UInt16(last + 1)))
            },
            finish: { e in completion(e.map { .failure($0) } ?? .success(found)) }))
    }

    /// Read Characteristic Value (4.8.1), continued with Read Blob (4.8.3) while the value
    /// fills whole responses, so values longer than one PDU arrive whole.
    public func read(_ handle: UInt16, _ completion: @escaping (Result<[UInt8], GATTClientError>) -> Void) {
        var value: [UInt8] = []
        submit(Procedure(
            start: { _ in .send(.readRequest(handle: handle)) },
            onResponse: { p, pdu, mtu in
                switch pdu {
                case .readResponse(let v), .readBlobResponse(let v):
                    value += v
                    guard v.count == mtu - 1, value.count < ATTLimits.maximumAttributeLength else { return .done }
                    return .send(.readBlobRequest(handle: handle, offset: UInt16(value.count)))
                case .errorResponse(.readBlobRequest, _, .attributeNotLong), .errorResponse(.readBlobRequest, _, .invalidOffset):
                    return .done  // the value ended exactly at a PDU boundary
                default:
                    return p.unexpected(pdu)
                }
            },
            finish: { e in completion(e.map { .failure($0) } ?? .success(value)) }))
    }

    /// Write Characteristic Value (4.9.3); a value longer than one Write Request goes as a
    /// Reliable Write (4.9.5): prepared pieces whose echoes are checked, then executed.
    public func write(_ value: [UInt8], to handle: UInt16,
                      _ completion: @escaping (Result<Void, GATTClientError>) -> Void) {
        guard value.count <= ATTLimits.maximumAttributeLength else {
            completion(.failure(.invalidValue("\(value.count) octets; an attribute holds at most 512")))
            return
        }
        var offset = 0
        var cancelling = false
        submit(Procedure(
            start: { mtu in
                if value.count <= mtu - 3 { return .send(.writeRequest(handle: handle, value: value[...])) }
                let piece = value[0..<min(value.count, mtu - 5)]
                return .send(.prepareWriteRequest(handle: handle, offset: 0, value: piece))
            },
            onResponse: { p, pdu, mtu in
                switch pdu {
                case .writeResponse:
                    return .done
                case .prepareWriteResponse(let h, let off, let echo):
                    let sent = value[offset..<min(value.count, offset + mtu - 5)]
                    guard h == handle, Int(off) == offset, echo == sent else {
                        p.fail(.invalidResponse("prepared write echo differs"))
                        cancelling = true
                        return .send(.executeWriteRequest(flags: .cancel))
                    }
                    offset += sent.count
                    if offset >= value.count { return .send(.executeWriteRequest(flags: .write)) }
                    let next = value[offset..<min(value.count, offset + mtu - 5)]
                    return .send(.prepareWriteRequest(handle: handle, offset: UInt16(offset), value: next))
                case .executeWriteResponse:
                    return .done
                case .errorResponse(.prepareWriteRequest, _, _) where !cancelling:
                    _ = p.unexpected(pdu)
                    cancelling = true
                    return .send(.executeWriteRequest(flags: .cancel))
                default:
                    return p.unexpected(pdu)
                }
            },
            finish: { e in completion(e.map { .failure($0) } ?? .success(())) }))
    }

    /// Write Without Response (4.9.1): a command, at most MTU − 3 octets, no transaction.
    public func writeWithoutResponse(_ value: [UInt8], to handle: UInt16) throws(GATTClientError) {
        guard value.count <= mtu - 3 else {
            throw .invalidValue("\(value.count) octets; a Write Command carries at most \(mtu - 3)")
        }
        submitCommand(.writeCommand(handle: handle, value: value[...]))
    }

    /// Writes a CCCD (4.10, 4.11): notifications, indications, or neither.
    public func setClientConfiguration(_ configuration: ClientConfiguration, descriptor handle: UInt16,
                                       _ completion: @escaping (Result<Void, GATTClientError>) -> Void) {
        let v = configuration.rawValue
        write([UInt8(v & 0xFF), UInt8(v >> 8)], to: handle, completion)
    }
}
