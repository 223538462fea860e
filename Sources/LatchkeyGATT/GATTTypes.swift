import LatchkeyATT

/// Characteristic properties (Core Spec v5.4, Vol 3, Part G, 3.3.1.1).
public struct CharacteristicProperties: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let broadcast = Self(rawValue: 0x01)
    public static let read = Self(rawValue: 0x02)
    public static let writeWithoutResponse = Self(rawValue: 0x04)
    public static let write = Self(rawValue: 0x08)
    public static let notify = Self(rawValue: 0x10)
    public static let indicate = Self(rawValue: 0x20)
    public static let authenticatedSignedWrites = Self(rawValue: 0x40)
    public static let extendedProperties = Self(rawValue: 0x80)
}

/// What the server enforces on an attribute (Vol 3, Part F, 3.2.5), independent of the
/// properties it advertises to clients.
public struct AttributePermissions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let read = Self(rawValue: 1 << 0)
    public static let write = Self(rawValue: 1 << 1)
    public static let readEncrypted = Self(rawValue: 1 << 2)
    public static let writeEncrypted = Self(rawValue: 1 << 3)
    public static let readAuthenticated = Self(rawValue: 1 << 4)
    public static let writeAuthenticated = Self(rawValue: 1 << 5)
    public static let readAuthorized = Self(rawValue: 1 << 6)
    public static let writeAuthorized = Self(rawValue: 1 << 7)
    public static let readWrite: Self = [.read, .write]
}

/// The security a link has reached; the server compares it with the permissions.
public struct LinkSecurity: Hashable, Sendable {
    public var encrypted: Bool
    public var authenticated: Bool
    public var authorized: Bool
    public init(encrypted: Bool = false, authenticated: Bool = false, authorized: Bool = false) {
        self.encrypted = encrypted; self.authenticated = authenticated; self.authorized = authorized
    }
    public static let none = LinkSecurity()
}

/// Client Characteristic Configuration bits (Vol 3, Part G, 3.3.3.3).
public struct ClientConfiguration: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let notify = Self(rawValue: 0x0001)
    public static let indicate = Self(rawValue: 0x0002)
}

/// Limits the ATT specification fixes.
public enum ATTLimits {
    /// Vol 3, Part F, 3.2.8: the default and minimum LE ATT_MTU.
    public static let minimumMTU = 23
    /// Vol 3, Part F, 3.2.9: an attribute value is at most 512 octets.
    public static let maximumAttributeLength = 512
    /// Vol 3, Part F, 3.3.3: a transaction not completed within 30 s has failed.
    public static let transactionTimeout: Duration = .seconds(30)
}
