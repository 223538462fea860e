import LatchkeyATT

/// A service found by discovery: its UUID and handle range.
public struct DiscoveredService: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var startHandle: UInt16
    public var endHandle: UInt16
    public init(uuid: BluetoothUUID, startHandle: UInt16, endHandle: UInt16) {
        self.uuid = uuid; self.startHandle = startHandle; self.endHandle = endHandle
    }
}

/// A characteristic found by discovery. `endHandle` is the last handle that can hold one of
/// its descriptors (the next declaration minus one, or the service end).
public struct DiscoveredCharacteristic: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var properties: CharacteristicProperties
    public var declarationHandle: UInt16
    public var valueHandle: UInt16
    public var endHandle: UInt16
    public init(uuid: BluetoothUUID, properties: CharacteristicProperties, declarationHandle: UInt16,
                valueHandle: UInt16, endHandle: UInt16) {
        self.uuid = uuid; self.properties = properties; self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle; self.endHandle = endHandle
    }
}

public struct DiscoveredDescriptor: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var handle: UInt16
    public init(uuid: BluetoothUUID, handle: UInt16) { self.uuid = uuid; self.handle = handle }
}

public enum GATTClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server answered with an Error Response.
    case att(ATTErrorCode, handle: UInt16)
    /// No response within the ATT transaction timeout; the bearer is unusable (3.3.3).
    case timeout
    case disconnected
    /// The server's response did not fit the request (wrong opcode, bad echo, bad data).
    case invalidResponse(String)
    /// The value cannot be sent this way (e.g. longer than an attribute can be).
    case invalidValue(String)

    public var description: String {
        switch self {
        case .att(let code, let handle): "ATT error \(code) on handle 0x" + String(handle, radix: 16)
        case .timeout: "ATT transaction timed out"
        case .disconnected: "link disconnected"
        case .invalidResponse(let why): "invalid response: \(why)"
        case .invalidValue(let why): "invalid value: \(why)"
        }
    }
}
