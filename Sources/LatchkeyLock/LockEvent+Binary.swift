import LatchkeyTransport

// The wire and log form of a LockEvent: fixed layout, fixed size, little-endian, led by a
// version byte. Every byte has one meaning and one valid value for a given event, so
// `LockEvent(decoding: e.encoded) == e` and a decoded buffer re-encodes to itself. It is
// sent over BLE in chunks and appended to the log as is. The layout, octet by octet:
// docs/PROTOCOL.md, "The event log".

/// Why bytes are not a LockEvent, and where.
public struct LockEventDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        public static let wrongLength = Code(raw: "wrong length")
        public static let unsupportedVersion = Code(raw: "unsupported version")
        public static let invalidField = Code(raw: "invalid field")
        public var description: String { raw }
    }

    public var code: Code
    /// The offset of the offending byte (the length for `wrongLength`).
    public var offset: Int

    public init(_ code: Code, offset: Int) {
        self.code = code
        self.offset = offset
    }

    public var description: String { "LockEvent \(code) at byte \(offset)" }
}

extension LockEvent {
    public static let encodingVersion: UInt8 = 1
    public static let encodedSize = 29
    private static let absent: UInt8 = 0xFF
    private static let whoFlag: UInt8 = 1 << 0
    private static let decisionFlag: UInt8 = 1 << 1
    private static let recoveredFlag: UInt8 = 1 << 2

    public var encoded: [UInt8] {
        var bytes: [UInt8] = [Self.encodingVersion, 0, lockStateBefore.rawValue, lockStateAfter.rawValue,
                              doorState.rawValue, Self.absent, Self.absent, Self.absent, 0]
        var who: UInt32 = 0
        var decision: UInt64 = 0
        switch kind {
        case .lockOperation(let record), .lockOperationError(let record, _):
            if case .lockOperationError(_, let error) = kind {
                bytes[1] = 1
                bytes[7] = error.rawValue
            }
            bytes[5] = record.operation?.rawValue ?? Self.absent
            bytes[6] = record.source.rawValue
            if let id = record.who { bytes[8] |= Self.whoFlag; who = id.rawValue }
            if let id = record.decision { bytes[8] |= Self.decisionFlag; decision = id.rawValue }
            if record.recovered { bytes[8] |= Self.recoveredFlag }
        case .doorLockAlarm(let code):
            bytes[1] = 2
            bytes[7] = code.rawValue
        case .doorStateChange(let state):
            bytes[1] = 3
            bytes[7] = state.rawValue
        case .lockUserChange(let change):
            bytes[1] = 4
            bytes[5] = change.change.rawValue
            bytes[6] = change.source.rawValue
            bytes[8] = Self.whoFlag
            who = change.key.rawValue
        case .operatingModeChange(let change):
            bytes[1] = 5
            bytes[5] = change.mode.rawValue
            bytes[6] = change.source.rawValue
            bytes[7] = change.previous.rawValue
            if let id = change.who { bytes[8] = Self.whoFlag; who = id.rawValue }
        case .suspectedRelay(let r):
            bytes[1] = 6
            bytes[5] = LockOperationType.unlock.rawValue
            bytes[6] = OperationSource.remote.rawValue
            bytes[7] = r.reason.rawValue
            bytes[8] = Self.whoFlag
            who = r.who.rawValue
            decision = UInt64(r.elapsedMicroseconds) | UInt64(r.intervalMicroseconds ?? UInt32.max) << 32
        }
        bytes.appendLittleEndian(who)
        bytes.appendLittleEndian(decision)
        bytes.appendLittleEndian(UInt64(bitPattern: time.nanoseconds))
        return bytes
    }

    /// Strict decoding: the exact length, a known version, and every field valid for the kind.
    public init(decoding input: some Collection<UInt8>) throws(LockEventDecodingError) {
        let bytes = Array(input)
        guard bytes.count == Self.encodedSize else {
            throw LockEventDecodingError(.wrongLength, offset: bytes.count)
        }
        guard bytes[0] == Self.encodingVersion else {
            throw LockEventDecodingError(.unsupportedVersion, offset: 0)
        }
        let before = try Self.field(bytes, 2, LockState.init(rawValue:))
        let after = try Self.field(bytes, 3, LockState.init(rawValue:))
        let door = try Self.field(bytes, 4, DoorState.init(rawValue:))
        let who = bytes.readLittleEndian(UInt32.self, at: 9)
        let decision = bytes.readLittleEndian(UInt64.self, at: 13)
        let flags = bytes[8]

        let kind: Kind
        switch bytes[1] {
        case 0, 1:
            guard flags & ~(Self.whoFlag | Self.decisionFlag | Self.recoveredFlag) == 0,
                  flags & Self.recoveredFlag == 0 || flags & Self.decisionFlag != 0 else {
                throw LockEventDecodingError(.invalidField, offset: 8)
            }
            if flags & Self.whoFlag == 0 && who != 0 { throw LockEventDecodingError(.invalidField, offset: 9) }
            if flags & Self.decisionFlag == 0 && decision != 0 { throw LockEventDecodingError(.invalidField, offset: 13) }
            // Only an error may leave the operation unknown: a completed one always has one.
            let unknownOperation = bytes[1] == 1 && bytes[5] == Self.absent
            let record = LockOperationRecord(
                operation: unknownOperation ? nil : try Self.field(bytes, 5, LockOperationType.init(rawValue:)),
                source: try Self.field(bytes, 6, OperationSource.init(rawValue:)),
                who: flags & Self.whoFlag != 0 ? KeyID(who) : nil,
                decision: flags & Self.decisionFlag != 0 ? DecisionID(decision) : nil,
                recovered: flags & Self.recoveredFlag != 0)
            if bytes[1] == 0 {
                try Self.expectAbsent(bytes, 7)
                kind = .lockOperation(record)
            } else {
                kind = .lockOperationError(record, try Self.field(bytes, 7, OperationError.init(rawValue:)))
            }
        case 2, 3:
            try Self.expectAbsent(bytes, 5)
            try Self.expectAbsent(bytes, 6)
            guard flags == 0 else { throw LockEventDecodingError(.invalidField, offset: 8) }
            guard who == 0 else { throw LockEventDecodingError(.invalidField, offset: 9) }
            guard decision == 0 else { throw LockEventDecodingError(.invalidField, offset: 13) }
            if bytes[1] == 2 {
                kind = .doorLockAlarm(try Self.field(bytes, 7, AlarmCode.init(rawValue:)))
            } else {
                let changed = try Self.field(bytes, 7, DoorState.init(rawValue:))
                guard changed == door else { throw LockEventDecodingError(.invalidField, offset: 7) }
                kind = .doorStateChange(changed)
            }
        case 4:
            try Self.expectAbsent(bytes, 7)
            guard flags == Self.whoFlag else { throw LockEventDecodingError(.invalidField, offset: 8) }
            guard decision == 0 else { throw LockEventDecodingError(.invalidField, offset: 13) }
            kind = .lockUserChange(KeyChangeRecord(try Self.field(bytes, 5, DataOperationType.init(rawValue:)),
                                                   source: try Self.field(bytes, 6, OperationSource.init(rawValue:)),
                                                   key: KeyID(who)))
        case 5:
            guard flags & ~Self.whoFlag == 0 else { throw LockEventDecodingError(.invalidField, offset: 8) }
            if flags & Self.whoFlag == 0 && who != 0 { throw LockEventDecodingError(.invalidField, offset: 9) }
            guard decision == 0 else { throw LockEventDecodingError(.invalidField, offset: 13) }
            kind = .operatingModeChange(OperatingModeChangeRecord(
                try Self.field(bytes, 5, OperatingMode.init(rawValue:)),
                previous: try Self.field(bytes, 7, OperatingMode.init(rawValue:)),
                source: try Self.field(bytes, 6, OperationSource.init(rawValue:)),
                who: flags & Self.whoFlag != 0 ? KeyID(who) : nil))
        case 6:
            guard bytes[5] == LockOperationType.unlock.rawValue else { throw LockEventDecodingError(.invalidField, offset: 5) }
            guard bytes[6] == OperationSource.remote.rawValue else { throw LockEventDecodingError(.invalidField, offset: 6) }
            guard flags == Self.whoFlag else { throw LockEventDecodingError(.invalidField, offset: 8) }
            let elapsed = UInt32(truncatingIfNeeded: decision), interval = UInt32(truncatingIfNeeded: decision >> 32)
            guard elapsed != UInt32.max else { throw LockEventDecodingError(.invalidField, offset: 13) }
            kind = .suspectedRelay(SuspectedRelayRecord(
                try Self.field(bytes, 7, SuspectedRelayRecord.Reason.init(rawValue:)), who: KeyID(who),
                elapsedMicroseconds: elapsed, intervalMicroseconds: interval == UInt32.max ? nil : interval))
        default:
            throw LockEventDecodingError(.invalidField, offset: 1)
        }
        let nanoseconds = Int64(bitPattern: bytes.readLittleEndian(UInt64.self, at: 21))
        self.init(kind: kind, time: Instant(nanoseconds: nanoseconds),
                  lockStateBefore: before, lockStateAfter: after, doorState: door)
    }

    private static func field<T>(_ bytes: [UInt8], _ offset: Int, _ make: (UInt8) -> T?) throws(LockEventDecodingError) -> T {
        guard let value = make(bytes[offset]) else { throw LockEventDecodingError(.invalidField, offset: offset) }
        return value
    }

    private static func expectAbsent(_ bytes: [UInt8], _ offset: Int) throws(LockEventDecodingError) {
        guard bytes[offset] == absent else { throw LockEventDecodingError(.invalidField, offset: offset) }
    }
}

extension [UInt8] {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        var v = value.littleEndian
        Swift.withUnsafeBytes(of: &v) { append(contentsOf: $0) }
    }

    func readLittleEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        var value: T = 0
        for index in 0..<MemoryLayout<T>.size {
            value |= T(self[offset + index]) << (8 * index)
        }
        return value
    }
}
