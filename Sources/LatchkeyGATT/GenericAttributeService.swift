import LatchkeyATT

extension BluetoothUUID {
    /// The Generic Attribute service (Vol 3 Part G 7).
    public static let genericAttributeService = BluetoothUUID(0x1801)
    /// Service Changed (7.1): indicates the handle range whose attributes changed.
    public static let serviceChanged = BluetoothUUID(0x2A05)
    /// Client Supported Features (7.2): bit 0 turns on Robust Caching for the writing client.
    public static let clientSupportedFeatures = BluetoothUUID(0x2B29)
    /// Database Hash (7.3): a fingerprint of the database's structure.
    public static let databaseHash = BluetoothUUID(0x2B2A)
}

/// The Generic Attribute service a server publishes right after the Generic Access service
/// (GenericAccessService.swift), so that a client can cache the server's handles and still
/// learn when they change: Service Changed, Client Supported Features and Database Hash
/// (Vol 3 Part G 7.1–7.3). The two values that are not fixed are answered by `GATTServer`
/// itself (per client, and from the database).
public enum GenericAttributeService {
    /// Handle of the service declaration, after the Generic Access service's 0x0001–0x0005;
    /// the service takes 0x0006–0x000D. Its characteristics follow in definition order, so
    /// Service Changed is always at 0x0008: its handle must not move while a client relies on
    /// it (7.1), and a relaunched server finds the subscriptions it restores there. (Versions
    /// without the Generic Access service had this service at 0x0001 and Service Changed at
    /// 0x0003; a relaunch from such a state moves the subscription and says so:
    /// PeripheralManager+Restoration.swift.)
    public static let startHandle: UInt16 = 0x0006

    public static let definition = GATTService(uuid: .genericAttributeService, characteristics: [
        // Indicate only; not readable (7.1).
        GATTCharacteristic(uuid: .serviceChanged, properties: [.indicate], permissions: []),
        GATTCharacteristic(uuid: .clientSupportedFeatures, properties: [.read, .write], permissions: .readWrite),
        GATTCharacteristic(uuid: .databaseHash, properties: [.read], permissions: .read),
    ])
}

/// The value of a Service Changed indication: the first and last handle affected (7.1).
public struct ServiceChangedRange: Hashable, Sendable {
    public var range: ClosedRange<UInt16>

    public init(_ range: ClosedRange<UInt16>) { self.range = range }

    /// Decodes the 4-octet value; nil for another length, a zero start, or start > end.
    public init?<C: Collection<UInt8>>(value: C) {
        guard value.count == 4 else { return nil }
        let b = Array(value)
        let start = UInt16(b[0]) | UInt16(b[1]) << 8, end = UInt16(b[2]) | UInt16(b[3]) << 8
        guard start >= 1, start <= end else { return nil }
        range = start...end
    }

    public var bytes: [UInt8] {
        [UInt8(range.lowerBound & 0xFF), UInt8(range.lowerBound >> 8),
         UInt8(range.upperBound & 0xFF), UInt8(range.upperBound >> 8)]
    }
}

/// Client Supported Features bits (7.2).
public struct ClientSupportedFeatures: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The client wants Database Out Of Sync errors while it is change-unaware (2.5.2.1).
    public static let robustCaching = Self(rawValue: 0x01)
    /// The bits this server understands; others a client writes are not kept.
    public static let supported: Self = [.robustCaching]
}
