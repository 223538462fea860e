import LatchkeyATT

// The request handlers. Each follows one discipline (after BlueZ gatt-server.c): length was
// checked by the decoder; then the handle range (Invalid Handle, naming the offending
// handle); then lookup (Attribute Not Found); then permissions. Every failure is exactly
// one Error Response carrying the request opcode, the handle and the code.
extension GATTServer {
    /// 3.4.3.1 and friends: start 0 or start > end is Invalid Handle, whatever the database.
    static func isInvalidRange(_ start: UInt16, _ end: UInt16) -> Bool { start == 0 || start > end }

    private func rangeError(_ op: ATTOpcode, _ start: UInt16, _ end: UInt16) -> ATTPDU? {
        // Reported on start.
        if Self.isInvalidRange(start, end) { return .errorResponse(request: op, handle: start, error: .invalidHandle) }
        return nil
    }

    func readPermissionError(_ a: GATTAttribute) -> ATTErrorCode? {
        if !a.permissions.contains(.read) { return .readNotPermitted }
        if a.permissions.contains(.readAuthenticated) && !security.authenticated { return .insufficientAuthentication }
        if a.permissions.contains(.readEncrypted) && !security.encrypted { return .insufficientEncryption }
        if a.permissions.contains(.readAuthorized) && !security.authorized { return .insufficientAuthorization }
        return nil
    }

    func writePermissionError(_ a: GATTAttribute) -> ATTErrorCode? {
        if !a.permissions.contains(.write) { return .writeNotPermitted }
        if a.permissions.contains(.writeAuthenticated) && !security.authenticated { return .insufficientAuthentication }
        if a.permissions.contains(.writeEncrypted) && !security.encrypted { return .insufficientEncryption }
        if a.permissions.contains(.writeAuthorized) && !security.authorized { return .insufficientAuthorization }
        return nil
    }

    /// The current value of an attribute as a client may read it.
    func value(of a: GATTAttribute) -> Result<[UInt8], ATTErrorCode> {
        switch a.kind {
        case .clientConfiguration(let valueHandle, _):
            let v = clientConfigurations[valueHandle, default: []].rawValue
            return .success([UInt8(v & 0xFF), UInt8(v >> 8)])
        case .characteristicValue where a.type == .clientSupportedFeatures:
            return .success([clientFeatures.rawValue])  // this client's, not the database's
        case .characteristicValue where a.type == .databaseHash:
            return .success(database.hash)
        case .characteristicValue(_, dynamic: true):
            guard let delegate else { return .failure(.unlikelyError) }
            return delegate.server(self, readDynamicValueAt: a.handle)
        default:
            return .success(a.value)
        }
    }

    func readValue(_ handle: UInt16) -> Result<[UInt8], ATTErrorCode> {
        guard handle != 0, let a = database.attribute(at: handle) else { return .failure(.invalidHandle) }
        if let e = readPermissionError(a) { return .failure(e) }
        return value(of: a)
    }

    func findInformation(_ start: UInt16, _ end: UInt16) -> ATTPDU {
        if let e = rangeError(.findInformationRequest, start, end) { return e }
        let found = database.attributes(in: start...end)
        guard let first = found.first else {
            return .errorResponse(request: .findInformationRequest, handle: start, error: .attributeNotFound)
        }
        // One UUID width per response; stop at the first other width or when full (3.4.3.2).
        let width = first.type.wireLength
        let room = (mtu - 2) / (2 + width)
        var entries: [(handle: UInt16, type: BluetoothUUID)] = []
        entries.reserveCapacity(min(room, found.count))
        for a in found {
            guard a.type.wireLength == width, entries.count < room else { break }
            entries.append((a.handle, a.type))
        }
        return .findInformationResponse(FindInformationList(entries))
    }

    func findByTypeValue(_ start: UInt16, _ end: UInt16, _ type: UInt16, _ value: ATTBytes) -> ATTPDU {
        if let e = rangeError(.findByTypeValueRequest, start, end) { return e }
        let uuid = BluetoothUUID(type)
        let room = (mtu - 1) / 4
        var entries: [(found: UInt16, groupEnd: UInt16)] = []
        for a in database.attributes(in: start...end) where a.type == uuid && a.value[...] == value {
            guard entries.count < room else { break }
            if case .service(let groupEnd) = a.kind { entries.append((a.handle, groupEnd)) }
            else { entries.append((a.handle, a.handle)) }
        }
        guard !entries.isEmpty else {
            return .errorResponse(request: .findByTypeValueRequest, handle: start, error: .attributeNotFound)
        }
        return .findByTypeValueResponse(HandlesInformationList(entries))
    }

    func readByType(_ start: UInt16, _ end: UInt16, _ type: BluetoothUUID) -> ATTPDU {
        if let e = rangeError(.readByTypeRequest, start, end) { return e }
        // 3.4.4.2: each value at most min(MTU − 4, 253) octets; all the same length.
        let maxValue = min(mtu - 4, 253)
        // Values as slices of the attributes' own arrays: no copy per entry.
        var entries: [(handle: UInt16, value: ATTBytes)] = []
        var used = 2
        scan: for a in database.attributes(in: start...end) where a.type == type {
            if let e = readPermissionError(a) {
                if entries.isEmpty { return .errorResponse(request: .readByTypeRequest, handle: a.handle, error: e) }
                break
            }
            let v: ATTBytes
            switch value(of: a) {
            case .success(let full): v = full.prefix(maxValue)
            case .failure(let e):
                if entries.isEmpty { return .errorResponse(request: .readByTypeRequest, handle: a.handle, error: e) }
                break scan
            }
            if let first = entries.first, first.value.count != v.count { break }
            guard used + 2 + v.count <= mtu else { break }
            entries.append((a.handle, v))
            used += 2 + v.count
        }
        guard !entries.isEmpty else {
            return .errorResponse(request: .readByTypeRequest, handle: start, error: .attributeNotFound)
        }
        return .readByTypeResponse(AttributeDataList(entries))
    }

    func readByGroupType(_ start: UInt16, _ end: UInt16, _ type: BluetoothUUID) -> ATTPDU {
        if let e = rangeError(.readByGroupTypeRequest, start, end) { return e }
        // Only services group attributes (Vol 3, Part G, 2.5.3).
        guard type == .primaryService || type == .secondaryService else {
            return .errorResponse(request: .readByGroupTypeRequest, handle: start, error: .unsupportedGroupType)
        }
        let maxValue = min(mtu - 6, 251)
        var entries: [(handle: UInt16, groupEnd: UInt16, value: ATTBytes)] = []
        var used = 2
        for a in database.attributes(in: start...end) where a.type == type {
            guard case .service(let groupEnd) = a.kind else { continue }
            let v = a.value.prefix(maxValue)
            if let first = entries.first, first.value.count != v.count { break }
            guard used + 4 + v.count <= mtu else { break }
            entries.append((a.handle, groupEnd, v))
            used += 4 + v.count
        }
        guard !entries.isEmpty else {
            return .errorResponse(request: .readByGroupTypeRequest, handle: start, error: .attributeNotFound)
        }
        return .readByGroupTypeResponse(GroupDataList(entries))
    }

    /// Applies one write; nil when accepted.
    func write(_ value: ATTBytes, at handle: UInt16, withResponse: Bool) -> ATTErrorCode? {
        guard handle != 0, let a = database.attribute(at: handle) else { return .invalidHandle }
        if let e = writePermissionError(a) { return e }
        guard value.count <= ATTLimits.maximumAttributeLength else { return .invalidAttributeValueLength }
        switch a.kind {
        case .clientConfiguration(let valueHandle, let properties):
            guard value.count == 2 else { return .invalidAttributeValueLength }
            let config = ClientConfiguration(rawValue: UInt16(value[value.startIndex]) | UInt16(value[value.startIndex + 1]) << 8)
            // Bits the characteristic cannot honour are refused (CSS Part B 1.2).
            var allowed: ClientConfiguration = []
            if properties.contains(.notify) { allowed.insert(.notify) }
            if properties.contains(.indicate) { allowed.insert(.indicate) }
            guard allowed.isSuperset(of: config) else { return .cccdImproperlyConfigured }
            let old = clientConfigurations[valueHandle, default: []]
            if !config.isEmpty, old != config,
               let e = delegate?.server(self, shouldChangeClientConfiguration: config, forValueAt: valueHandle) { return e }
            clientConfigurations[valueHandle] = config.isEmpty ? nil : config
            if old != config { delegate?.server(self, didChangeClientConfiguration: config, forValueAt: valueHandle) }
            return nil
        case .service, .characteristicDeclaration:
            return .writeNotPermitted
        case .characteristicValue where a.type == .clientSupportedFeatures:
            return writeClientFeatures(value)
        case .characteristicValue(_, let dynamic):
            if let e = delegate?.server(self, write: value, at: handle, withResponse: withResponse) { return e }
            if !dynamic { database.setValue(Array(value), at: handle) }
            return nil
        case .descriptor:
            if let e = delegate?.server(self, write: value, at: handle, withResponse: withResponse) { return e }
            database.setValue(Array(value), at: handle)
            return nil
        }
    }

    func prepareWrite(_ handle: UInt16, _ offset: UInt16, _ value: ATTBytes) -> ATTPDU {
        guard handle != 0, let a = database.attribute(at: handle) else {
            return .errorResponse(request: .prepareWriteRequest, handle: handle, error: .invalidHandle)
        }
        if let e = writePermissionError(a) {
            return .errorResponse(request: .prepareWriteRequest, handle: handle, error: e)
        }
        guard prepareQueue.count < Self.maximumPrepareQueueLength else {
            return .errorResponse(request: .prepareWriteRequest, handle: handle, error: .prepareQueueFull)
        }
        prepareQueue.append((handle, offset, Array(value)))
        return .prepareWriteResponse(handle: handle, offset: offset, value: value)
    }

    func executeWrite(_ flags: ExecuteWriteFlags) -> ATTPDU {
        let queue = prepareQueue
        prepareQueue.removeAll()
        guard flags == .write else { return .executeWriteResponse }
        // Each prepared write lands at its offset in the value as it stands (3.4.6.3), so a
        // handle's value starts from its current one; an offset past its end is Invalid
        // Offset. A write at offset n keeps octets 0..<n and replaces the rest, so pieces at
        // 0, 18, 36, ... build exactly the value sent. Offsets and lengths are checked here,
        // not at prepare time (3.4.6.1), and all handles are assembled before any is
        // written, so a failed execute leaves every attribute as it was.
        var order: [UInt16] = []
        var assembled: [UInt16: [UInt8]] = [:]
        for item in queue {
            var v: [UInt8]
            if let partial = assembled[item.handle] {
                v = partial
            } else {
                order.append(item.handle)
                v = currentValueForLongWrite(item.handle)
            }
            guard Int(item.offset) <= v.count else {
                return .errorResponse(request: .executeWriteRequest, handle: item.handle, error: .invalidOffset)
            }
            v.replaceSubrange(Int(item.offset)..., with: item.value)
            guard v.count <= ATTLimits.maximumAttributeLength else {
                return .errorResponse(request: .executeWriteRequest, handle: item.handle, error: .invalidAttributeValueLength)
            }
            assembled[item.handle] = v
        }
        for h in order {
            if let e = write(assembled[h]![...], at: h, withResponse: true) {
                return .errorResponse(request: .executeWriteRequest, handle: h, error: e)
            }
        }
        return .executeWriteResponse
    }

    /// The value a long write starts from: the stored one, or the application's for a
    /// dynamic value it lets clients read; empty when there is none to read.
    private func currentValueForLongWrite(_ handle: UInt16) -> [UInt8] {
        guard let a = database.attribute(at: handle), case .success(let v) = value(of: a) else { return [] }
        return v
    }
}
