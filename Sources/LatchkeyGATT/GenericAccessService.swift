import LatchkeyATT

extension BluetoothUUID {
    /// The Generic Access service (Core Vol 3 Part C 12): what the device calls itself and
    /// what it is. Mandatory on every GATT server (Vol 3 Part G 7 names it with the Generic
    /// Attribute service); BlueZ, Android and iOS read it when they connect.
    public static let genericAccessService = BluetoothUUID(0x1800)
    /// Device Name (Vol 3 Part C 12.1): UTF-8, 0–248 octets.
    public static let deviceName = BluetoothUUID(0x2A00)
    /// Appearance (Vol 3 Part C 12.2): a 16-bit value from the Assigned Numbers.
    public static let appearance = BluetoothUUID(0x2A01)
}

/// An Appearance value: a category (upper 10 bits) and a subcategory (lower 6 bits), from the
/// Bluetooth SIG's Assigned Numbers document, section 2.6 "Appearance Values".
public struct Appearance: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(category: UInt16, subcategory: UInt16) {
        rawValue = category << 6 | subcategory & 0x3F
    }

    /// 0x0000: Unknown, for a device that does not say.
    public static let unknown = Appearance(rawValue: 0x0000)
    /// 0x0708: category 0x01C Access Control, subcategory 0x08 Door Lock (Assigned Numbers
    /// 2.6.2). Not 0x0704 Access Lock: Latchkey drives a door's lock.
    public static let doorLock = Appearance(category: 0x01C, subcategory: 0x08)

    /// The characteristic's value: little-endian, like every multi-octet GATT value.
    public var bytes: [UInt8] { [UInt8(rawValue & 0xFF), UInt8(rawValue >> 8)] }
}

/// The Generic Access service's values: the device's name and appearance.
public struct GenericAccess: Hashable, Sendable {
    public var deviceName: String
    public var appearance: Appearance
    public init(deviceName: String, appearance: Appearance = .unknown) {
        self.deviceName = deviceName; self.appearance = appearance
    }
}

/// The Generic Access service a server publishes first, at 0x0001, as most stacks do (BlueZ,
/// Android, Nordic's SoftDevice), so that a client finds it where it looks first. Both values
/// are read-only: the name is the owner's choice, made in the configuration, never by a
/// client (Vol 3 Part C 12.1 lets a server make it writable; a door lock does not).
public enum GenericAccessService {
    /// Handle of the service declaration; the service takes 0x0001–0x0005.
    public static let startHandle: UInt16 = 0x0001
    /// Device Name is at most 248 octets (Vol 3 Part C 12.1).
    public static let maximumDeviceNameLength = 248

    public static func definition(_ values: GenericAccess) -> GATTService {
        GATTService(uuid: .genericAccessService, characteristics: [
            GATTCharacteristic(uuid: .deviceName, properties: [.read], permissions: .read,
                               value: deviceNameValue(values.deviceName)),
            GATTCharacteristic(uuid: .appearance, properties: [.read], permissions: .read,
                               value: values.appearance.bytes),
        ])
    }

    /// The name's UTF-8, cut to 248 octets between characters (never inside one).
    static func deviceNameValue(_ name: String) -> [UInt8] {
        var value: [UInt8] = []
        for scalar in name.unicodeScalars {
            guard value.count + UTF8.width(scalar) <= maximumDeviceNameLength else { break }
            value.append(contentsOf: String(scalar).utf8)
        }
        return value
    }
}
