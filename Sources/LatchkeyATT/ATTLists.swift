/// Wire-form lists carried by ATT responses. Each is a validated view over the received
/// bytes: constructing one checks the lengths, iterating it never fails. Each iterates with
/// a struct of its own: an `AnyIterator` boxed its closure on the heap for every loop over a
/// list (a quarter of the fuzz target's allocations were Read Multiple's handle loops).

/// Find Information Response data (3.4.3.2): format 1 = (handle, 16-bit UUID) pairs,
/// format 2 = (handle, 128-bit UUID) pairs.
public struct FindInformationList: Equatable, Sendable, Sequence {
    public let format: UInt8
    public let raw: ATTBytes
    var uuidLength: Int { format == 1 ? 2 : 16 }

    init?(format: UInt8, raw: ATTBytes) {
        guard format == 1 || format == 2 else { return nil }
        let step = 2 + (format == 1 ? 2 : 16)
        guard !raw.isEmpty, raw.count % step == 0 else { return nil }
        self.format = format
        self.raw = raw
    }

    /// Builds a list; all UUIDs must have the same width (the spec has one format per PDU).
    public init(_ entries: [(handle: UInt16, type: BluetoothUUID)]) {
        precondition(!entries.isEmpty)
        let width = entries[0].type.wireLength
        precondition(entries.allSatisfy { $0.type.wireLength == width }, "one UUID width per response")
        var out: [UInt8] = []
        out.reserveCapacity(entries.count * (2 + width))
        for e in entries { out.appendLE(e.handle); e.type.append(to: &out) }
        self.format = width == 2 ? 1 : 2
        self.raw = out[...]
    }

    public struct Iterator: IteratorProtocol {
        let raw: ATTBytes, width: Int
        var i: Int
        public mutating func next() -> (handle: UInt16, type: BluetoothUUID)? {
            guard i + 2 + width <= raw.endIndex else { return nil }
            defer { i += 2 + width }
            return (raw.readLE16(at: i), BluetoothUUID(littleEndian: raw[(i + 2)..<(i + 2 + width)])!)
        }
    }

    public func makeIterator() -> Iterator { Iterator(raw: raw, width: uuidLength, i: raw.startIndex) }
}

/// Find By Type Value Response (3.4.3.4): (found attribute handle, group end handle) pairs.
public struct HandlesInformationList: Equatable, Sendable, Sequence {
    public let raw: ATTBytes

    init?(raw: ATTBytes) {
        guard !raw.isEmpty, raw.count % 4 == 0 else { return nil }
        self.raw = raw
    }

    public init(_ entries: [(found: UInt16, groupEnd: UInt16)]) {
        precondition(!entries.isEmpty)
        var out: [UInt8] = []
        out.reserveCapacity(entries.count * 4)
        for e in entries { out.appendLE(e.found); out.appendLE(e.groupEnd) }
        self.raw = out[...]
    }

    public struct Iterator: IteratorProtocol {
        let raw: ATTBytes
        var i: Int
        public mutating func next() -> (found: UInt16, groupEnd: UInt16)? {
            guard i + 4 <= raw.endIndex else { return nil }
            defer { i += 4 }
            return (raw.readLE16(at: i), raw.readLE16(at: i + 2))
        }
    }

    public func makeIterator() -> Iterator { Iterator(raw: raw, i: raw.startIndex) }
}

/// Read By Type Response attribute data (3.4.4.2): fixed-length (handle, value) entries.
public struct AttributeDataList: Equatable, Sendable, Sequence {
    /// Length of one entry: 2 (handle) + value length.
    public let entryLength: Int
    public let raw: ATTBytes

    init?(entryLength: Int, raw: ATTBytes) {
        guard entryLength >= 2, !raw.isEmpty, raw.count % entryLength == 0 else { return nil }
        self.entryLength = entryLength
        self.raw = raw
    }

    /// All values must have the same length (the response carries one length).
    public init<Value: Collection<UInt8>>(_ entries: [(handle: UInt16, value: Value)]) {
        precondition(!entries.isEmpty)
        let n = entries[0].value.count
        precondition(entries.allSatisfy { $0.value.count == n } && n <= 253, "one value length, at most 253")
        var out: [UInt8] = []
        out.reserveCapacity(entries.count * (2 + n))
        for e in entries { out.appendLE(e.handle); out += e.value }
        self.entryLength = 2 + n
        self.raw = out[...]
    }

    public struct Iterator: IteratorProtocol {
        let raw: ATTBytes, step: Int
        var i: Int
        public mutating func next() -> (handle: UInt16, value: ATTBytes)? {
            guard i + step <= raw.endIndex else { return nil }
            defer { i += step }
            return (raw.readLE16(at: i), raw[(i + 2)..<(i + step)])
        }
    }

    public func makeIterator() -> Iterator { Iterator(raw: raw, step: entryLength, i: raw.startIndex) }
}

/// Read By Group Type Response attribute data (3.4.4.10): (handle, end group handle, value).
public struct GroupDataList: Equatable, Sendable, Sequence {
    public let entryLength: Int
    public let raw: ATTBytes

    init?(entryLength: Int, raw: ATTBytes) {
        guard entryLength >= 4, !raw.isEmpty, raw.count % entryLength == 0 else { return nil }
        self.entryLength = entryLength
        self.raw = raw
    }

    public init<Value: Collection<UInt8>>(_ entries: [(handle: UInt16, groupEnd: UInt16, value: Value)]) {
        precondition(!entries.isEmpty)
        let n = entries[0].value.count
        precondition(entries.allSatisfy { $0.value.count == n } && n <= 251, "one value length, at most 251")
        var out: [UInt8] = []
        out.reserveCapacity(entries.count * (4 + n))
        for e in entries { out.appendLE(e.handle); out.appendLE(e.groupEnd); out += e.value }
        self.entryLength = 4 + n
        self.raw = out[...]
    }

    public struct Iterator: IteratorProtocol {
        let raw: ATTBytes, step: Int
        var i: Int
        public mutating func next() -> (handle: UInt16, groupEnd: UInt16, value: ATTBytes)? {
            guard i + step <= raw.endIndex else { return nil }
            defer { i += step }
            return (raw.readLE16(at: i), raw.readLE16(at: i + 2), raw[(i + 4)..<(i + step)])
        }
    }

    public func makeIterator() -> Iterator { Iterator(raw: raw, step: entryLength, i: raw.startIndex) }
}

/// Read Multiple Request handles (3.4.4.7): two or more.
public struct HandleList: Equatable, Sendable, Sequence {
    public let raw: ATTBytes

    init?(raw: ATTBytes) {
        guard raw.count >= 4, raw.count % 2 == 0 else { return nil }
        self.raw = raw
    }

    public init(_ handles: [UInt16]) {
        precondition(handles.count >= 2, "Read Multiple needs two or more handles")
        var out: [UInt8] = []
        out.reserveCapacity(handles.count * 2)
        for h in handles { out.appendLE(h) }
        self.raw = out[...]
    }

    public var count: Int { raw.count / 2 }

    public struct Iterator: IteratorProtocol {
        let raw: ATTBytes
        var i: Int
        public mutating func next() -> UInt16? {
            guard i + 2 <= raw.endIndex else { return nil }
            defer { i += 2 }
            return raw.readLE16(at: i)
        }
    }

    public func makeIterator() -> Iterator { Iterator(raw: raw, i: raw.startIndex) }
}

extension ArraySlice<UInt8> {
    @inline(__always)
    func readLE16(at i: Index) -> UInt16 { UInt16(self[i]) | UInt16(self[i + 1]) << 8 }
}

extension Array<UInt8> {
    @inline(__always)
    mutating func appendLE(_ v: UInt16) {
        append(UInt8(truncatingIfNeeded: v))
        append(UInt8(truncatingIfNeeded: v >> 8))
    }
}
