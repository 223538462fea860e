/// The lock state characteristic's value (read + notify).
///
///     0     version (0x01)
///     1     lock state (Matter LockState; 0x80/0x81 locking/unlocking; 0xFF unknown)
///     2     door state (Matter DoorState; 0xFF unknown)
///     3     operating mode (Matter OperatingMode)
///     4     actuator enabled (0/1)
///     5..8  sequence number of the newest log event (big-endian)
public struct LockStatusFrame: Equatable, Sendable {
    public static let version: UInt8 = 1
    public static let length = 9

    public var lockState: UInt8
    public var doorState: UInt8
    public var operatingMode: UInt8
    public var actuatorEnabled: Bool
    public var lastEventSequence: UInt32

    public init(lockState: UInt8, doorState: UInt8, operatingMode: UInt8, actuatorEnabled: Bool, lastEventSequence: UInt32) {
        self.lockState = lockState; self.doorState = doorState; self.operatingMode = operatingMode
        self.actuatorEnabled = actuatorEnabled; self.lastEventSequence = lastEventSequence
    }

    public var bytes: [UInt8] {
        var out: [UInt8] = [Self.version, lockState, doorState, operatingMode, actuatorEnabled ? 1 : 0]
        out.appendBE(lastEventSequence)
        return out
    }

    public init(decoding bytes: [UInt8]) throws(LockProtocolError) {
        guard bytes.count == Self.length, bytes[0] == Self.version, bytes[4] <= 1 else { throw .malformed("lock status") }
        lockState = bytes[1]; doorState = bytes[2]; operatingMode = bytes[3]
        actuatorEnabled = bytes[4] == 1
        lastEventSequence = bytes.readBE32(at: 5)
    }
}

/// One record in an event-log transfer: sequence (4, big-endian), length (1), encoded event.
public enum LogTransferRecord {
    public static func append(sequence: UInt32, event: [UInt8], to out: inout [UInt8]) {
        precondition(event.count <= 255)
        out.appendBE(sequence)
        out.append(UInt8(event.count))
        out += event
    }

    /// Splits a reassembled transfer into (sequence, event bytes); nil when malformed.
    public static func split(_ bytes: [UInt8]) -> [(sequence: UInt32, event: [UInt8])]? {
        var out: [(UInt32, [UInt8])] = []
        var i = 0
        while i < bytes.count {
            guard i + 5 <= bytes.count else { return nil }
            let seq = bytes.readBE32(at: i)
            let n = Int(bytes[i + 4])
            guard i + 5 + n <= bytes.count else { return nil }
            out.append((seq, Array(bytes[(i + 5)..<(i + 5 + n)])))
            i += 5 + n
        }
        return out
    }
}
