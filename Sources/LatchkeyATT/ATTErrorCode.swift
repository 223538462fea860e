/// ATT error codes (Core Spec v5.4, Vol 3, Part F, 3.4.1.1 table 3.4), plus the Common
/// Profile and Service Error Codes (CSS Part B, 1.2). A struct, not an enum, so that the
/// application range 0x80–0x9F stays representable, as `Errno` does for errno values.
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = Self(rawValue: 0x01)
    public static let readNotPermitted = Self(rawValue: 0x02)
    public static let writeNotPermitted = Self(rawValue: 0x03)
    public static let invalidPDU = Self(rawValue: 0x04)
    public static let insufficientAuthentication = Self(rawValue: 0x05)
    public static let requestNotSupported = Self(rawValue: 0x06)
    public static let invalidOffset = Self(rawValue: 0x07)
    public static let insufficientAuthorization = Self(rawValue: 0x08)
    public static let prepareQueueFull = Self(rawValue: 0x09)
    public static let attributeNotFound = Self(rawValue: 0x0A)
    public static let attributeNotLong = Self(rawValue: 0x0B)
    public static let insufficientEncryptionKeySize = Self(rawValue: 0x0C)
    public static let invalidAttributeValueLength = Self(rawValue: 0x0D)
    public static let unlikelyError = Self(rawValue: 0x0E)
    public static let insufficientEncryption = Self(rawValue: 0x0F)
    public static let unsupportedGroupType = Self(rawValue: 0x10)
    public static let insufficientResources = Self(rawValue: 0x11)
    public static let databaseOutOfSync = Self(rawValue: 0x12)
    public static let valueNotAllowed = Self(rawValue: 0x13)
    // Common Profile and Service Error Codes (CSS Part B 1.2).
    public static let writeRequestRejected = Self(rawValue: 0xFC)
    public static let cccdImproperlyConfigured = Self(rawValue: 0xFD)
    public static let procedureAlreadyInProgress = Self(rawValue: 0xFE)
    public static let outOfRange = Self(rawValue: 0xFF)

    /// An application error (0x80–0x9F), defined by a higher-layer specification.
    public static func application(_ code: UInt8) -> Self {
        precondition((0x80...0x9F).contains(code), "application errors are 0x80-0x9F")
        return Self(rawValue: code)
    }
    public var isApplicationError: Bool { (0x80...0x9F).contains(rawValue) }

    public var description: String {
        let names: [UInt8: String] = [
            0x01: "Invalid Handle", 0x02: "Read Not Permitted", 0x03: "Write Not Permitted", 0x04: "Invalid PDU",
            0x05: "Insufficient Authentication", 0x06: "Request Not Supported", 0x07: "Invalid Offset",
            0x08: "Insufficient Authorization", 0x09: "Prepare Queue Full", 0x0A: "Attribute Not Found",
            0x0B: "Attribute Not Long", 0x0C: "Insufficient Encryption Key Size",
            0x0D: "Invalid Attribute Value Length", 0x0E: "Unlikely Error", 0x0F: "Insufficient Encryption",
            0x10: "Unsupported Group Type", 0x11: "Insufficient Resources", 0x12: "Database Out Of Sync",
            0x13: "Value Not Allowed", 0xFC: "Write Request Rejected",
            0xFD: "CCCD Improperly Configured", 0xFE: "Procedure Already In Progress", 0xFF: "Out Of Range",
        ]
        if let n = names[rawValue] { return n }
        return (isApplicationError ? "Application Error 0x" : "ATT error 0x") + String(rawValue, radix: 16)
    }
}
