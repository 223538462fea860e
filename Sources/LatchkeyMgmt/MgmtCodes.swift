// The code tables of BlueZ doc/mgmt-api.txt as swift-system-style structs: every value
// stays representable (a newer kernel's code is not an error), the ones we use have names.

/// A mgmt command opcode.
public struct MgmtOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let readControllerIndexList = Self(rawValue: 0x0003)
    public static let readControllerInfo = Self(rawValue: 0x0004)
    public static let setPowered = Self(rawValue: 0x0005)
    public static let setConnectable = Self(rawValue: 0x0007)
    public static let setBondable = Self(rawValue: 0x0009)
    public static let setLowEnergy = Self(rawValue: 0x000D)
    public static let disconnect = Self(rawValue: 0x0014)
    public static let getConnections = Self(rawValue: 0x0015)
    public static let startDiscovery = Self(rawValue: 0x0023)
    public static let stopDiscovery = Self(rawValue: 0x0024)
    public static let addDevice = Self(rawValue: 0x0033)
    public static let removeDevice = Self(rawValue: 0x0034)
    public static let addAdvertising = Self(rawValue: 0x003E)
    public static let removeAdvertising = Self(rawValue: 0x003F)
    public static let setDefaultSystemConfiguration = Self(rawValue: 0x004C)

    private static let names: [UInt16: String] = [
        0x0003: "Read Controller Index List", 0x0004: "Read Controller Information", 0x0005: "Set Powered",
        0x0007: "Set Connectable", 0x0009: "Set Bondable", 0x000D: "Set Low Energy", 0x0014: "Disconnect",
        0x0015: "Get Connections", 0x0023: "Start Discovery", 0x0024: "Stop Discovery", 0x0033: "Add Device",
        0x0034: "Remove Device", 0x003E: "Add Advertising", 0x003F: "Remove Advertising",
        0x004C: "Set Default System Configuration",
    ]

    /// "Add Device (0x0033)": the name the mgmt documentation gives, and the code.
    public var description: String { "\(Self.names[rawValue] ?? "Command") (\(hex16(rawValue)))" }
}

/// A mgmt event code.
public struct MgmtEventCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let commandComplete = Self(rawValue: 0x0001)
    public static let commandStatus = Self(rawValue: 0x0002)
    public static let controllerError = Self(rawValue: 0x0003)
    public static let indexAdded = Self(rawValue: 0x0004)
    public static let indexRemoved = Self(rawValue: 0x0005)
    public static let newSettings = Self(rawValue: 0x0006)
    public static let deviceConnected = Self(rawValue: 0x000B)
    public static let deviceDisconnected = Self(rawValue: 0x000C)
    public static let connectFailed = Self(rawValue: 0x000D)
    public static let deviceFound = Self(rawValue: 0x0012)
    public static let discovering = Self(rawValue: 0x0013)
    public static let deviceAdded = Self(rawValue: 0x001A)
    public static let deviceRemoved = Self(rawValue: 0x001B)
    public static let advertisingAdded = Self(rawValue: 0x0023)
    public static let advertisingRemoved = Self(rawValue: 0x0024)

    public var description: String { "event \(hex16(rawValue))" }
}

/// The status of a Command Complete / Command Status event ("Error Codes").
public struct MgmtStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = Self(rawValue: 0x00)
    public static let unknownCommand = Self(rawValue: 0x01)
    public static let notConnected = Self(rawValue: 0x02)
    public static let failed = Self(rawValue: 0x03)
    public static let connectFailed = Self(rawValue: 0x04)
    public static let authenticationFailed = Self(rawValue: 0x05)
    public static let notPaired = Self(rawValue: 0x06)
    public static let noResources = Self(rawValue: 0x07)
    public static let timeout = Self(rawValue: 0x08)
    public static let alreadyConnected = Self(rawValue: 0x09)
    public static let busy = Self(rawValue: 0x0A)
    public static let rejected = Self(rawValue: 0x0B)
    public static let notSupported = Self(rawValue: 0x0C)
    public static let invalidParameters = Self(rawValue: 0x0D)
    public static let disconnected = Self(rawValue: 0x0E)
    public static let notPowered = Self(rawValue: 0x0F)
    public static let cancelled = Self(rawValue: 0x10)
    public static let invalidIndex = Self(rawValue: 0x11)
    public static let rfKilled = Self(rawValue: 0x12)
    public static let alreadyPaired = Self(rawValue: 0x13)
    public static let permissionDenied = Self(rawValue: 0x14)

    private static let names = [
        "Success", "Unknown Command", "Not Connected", "Failed", "Connect Failed", "Authentication Failed",
        "Not Paired", "No Resources", "Timeout", "Already Connected", "Busy", "Rejected", "Not Supported",
        "Invalid Parameters", "Disconnected", "Not Powered", "Cancelled", "Invalid Index", "RFKilled",
        "Already Paired", "Permission Denied",
    ]

    public var description: String {
        let name = Int(rawValue) < Self.names.count ? Self.names[Int(rawValue)] : "Unknown Status"
        return "\(name) (0x\(hex(rawValue)))"
    }
}

/// Current_Settings / Supported_Settings bits (Read Controller Information).
public struct MgmtSettings: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let powered = Self(rawValue: 1 << 0)
    public static let connectable = Self(rawValue: 1 << 1)
    public static let fastConnectable = Self(rawValue: 1 << 2)
    public static let discoverable = Self(rawValue: 1 << 3)
    public static let bondable = Self(rawValue: 1 << 4)
    public static let linkSecurity = Self(rawValue: 1 << 5)
    public static let secureSimplePairing = Self(rawValue: 1 << 6)
    public static let basicRate = Self(rawValue: 1 << 7)
    public static let highSpeed = Self(rawValue: 1 << 8)
    public static let lowEnergy = Self(rawValue: 1 << 9)
    public static let advertising = Self(rawValue: 1 << 10)
    public static let secureConnections = Self(rawValue: 1 << 11)
    public static let debugKeys = Self(rawValue: 1 << 12)
    public static let privacy = Self(rawValue: 1 << 13)
    public static let configuration = Self(rawValue: 1 << 14)
    public static let staticAddress = Self(rawValue: 1 << 15)

    public var description: String {
        let names: [(Self, String)] = [(.powered, "powered"), (.connectable, "connectable"), (.bondable, "bondable"),
                                       (.basicRate, "br/edr"), (.lowEnergy, "le"), (.advertising, "advertising"),
                                       (.privacy, "privacy")]
        return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: " ") + "]"
    }
}

func hex(_ byte: UInt8) -> String { (byte < 16 ? "0" : "") + String(byte, radix: 16) }
func hex16(_ value: UInt16) -> String { "0x" + hex(UInt8(value >> 8)) + hex(UInt8(truncatingIfNeeded: value)) }
