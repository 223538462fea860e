import LatchkeyTransport

/// The mgmt events Latchkey reads (mgmt-api.txt, "Events"); any other code decodes as
/// `.other`, so a newer kernel's events pass through harmlessly.
public enum MgmtEvent: Hashable, Sendable {
    case commandComplete(MgmtOpcode, MgmtStatus, returnParameters: [UInt8])
    /// An early status; with anything but Success the command has finished.
    case commandStatus(MgmtOpcode, MgmtStatus)
    /// HCI Hardware Error from the controller.
    case controllerError(code: UInt8)
    case indexAdded
    case indexRemoved
    case newSettings(MgmtSettings)
    case deviceConnected(DeviceConnected)
    case deviceDisconnected(MgmtDeviceAddress, MgmtDisconnectReason)
    case connectFailed(MgmtDeviceAddress, MgmtStatus)
    case deviceFound(DeviceFound)
    case discovering(DiscoveryTypesRaw, Bool)
    /// Sent to the other mgmt sockets when one adds or removes a device.
    case deviceAdded(MgmtDeviceAddress, action: UInt8)
    case deviceRemoved(MgmtDeviceAddress)
    /// Sent to the other mgmt sockets when one adds or removes an instance.
    case advertisingAdded(instance: UInt8)
    case advertisingRemoved(instance: UInt8)
    case other(MgmtEventCode, [UInt8])

    public typealias DiscoveryTypesRaw = UInt8

    /// Decodes the parameters of an event with code `code`.
    public init(code: MgmtEventCode, parameters: [UInt8]) throws(MgmtError) {
        var r = ByteReader(parameters, what: "\(code)")
        switch code {
        case .commandComplete:
            self = .commandComplete(MgmtOpcode(rawValue: try r.u16()), MgmtStatus(rawValue: try r.u8()),
                                    returnParameters: r.rest())
        case .commandStatus:
            self = .commandStatus(MgmtOpcode(rawValue: try r.u16()), MgmtStatus(rawValue: try r.u8()))
        case .controllerError: self = .controllerError(code: try r.u8())
        case .indexAdded: self = .indexAdded
        case .indexRemoved: self = .indexRemoved
        case .newSettings: self = .newSettings(MgmtSettings(rawValue: try r.u32()))
        case .deviceConnected:
            let address = try MgmtDeviceAddress.read(from: &r)
            let flags = try r.u32()
            let eir = try r.bytes(Int(try r.u16()))
            self = .deviceConnected(DeviceConnected(address: address, flags: flags, eir: eir))
        case .deviceDisconnected:
            self = .deviceDisconnected(try MgmtDeviceAddress.read(from: &r), MgmtDisconnectReason(rawValue: try r.u8()))
        case .connectFailed:
            self = .connectFailed(try MgmtDeviceAddress.read(from: &r), MgmtStatus(rawValue: try r.u8()))
        case .deviceFound:
            let address = try MgmtDeviceAddress.read(from: &r)
            let rssi = Int8(bitPattern: try r.u8())
            let flags = try r.u32()
            let eir = try r.bytes(Int(try r.u16()))
            self = .deviceFound(DeviceFound(address: address, rssi: rssi, flags: flags, eir: eir))
        case .discovering: self = .discovering(try r.u8(), try r.u8() != 0)
        case .deviceAdded: self = .deviceAdded(try MgmtDeviceAddress.read(from: &r), action: try r.u8())
        case .deviceRemoved: self = .deviceRemoved(try MgmtDeviceAddress.read(from: &r))
        case .advertisingAdded: self = .advertisingAdded(instance: try r.u8())
        case .advertisingRemoved: self = .advertisingRemoved(instance: try r.u8())
        default: self = .other(code, parameters)
        }
    }
}

/// Device Connected: a baseband link is up (before any socket uses it).
public struct DeviceConnected: Hashable, Sendable {
    public var address: MgmtDeviceAddress
    public var flags: UInt32
    public var eir: [UInt8]

    public init(address: MgmtDeviceAddress, flags: UInt32, eir: [UInt8] = []) {
        self.address = address
        self.flags = flags
        self.eir = eir
    }

    /// Flags bit 3 "Initiated Connection": we connected (central), e.g. from Add Device.
    public var isInitiatedLocally: Bool { flags & (1 << 3) != 0 }
}

/// Device Found: an advertising report (advertising data and scan response combined
/// since mgmt 1.6).
public struct DeviceFound: Hashable, Sendable {
    public var address: MgmtDeviceAddress
    /// dBm; 127 = not available.
    public var rssi: Int8
    public var flags: UInt32
    public var eir: [UInt8]

    public init(address: MgmtDeviceAddress, rssi: Int8, flags: UInt32, eir: [UInt8]) {
        self.address = address
        self.rssi = rssi
        self.flags = flags
        self.eir = eir
    }

    /// Flags bit 2 "Not Connectable".
    public var isConnectable: Bool { flags & (1 << 2) == 0 }
}

/// Device Disconnected's Reason: coarser than the HCI reason it came from.
public struct MgmtDisconnectReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let unspecified = Self(rawValue: 0)
    public static let connectionTimeout = Self(rawValue: 1)
    public static let localHost = Self(rawValue: 2)
    public static let remoteHost = Self(rawValue: 3)
    public static let authenticationFailure = Self(rawValue: 4)
    public static let localHostSuspend = Self(rawValue: 5)

    /// The HCI reason the seam reports (Core Vol 1 Part F); nil for "unspecified" or unknown.
    public var hciReason: DisconnectReason? {
        switch self {
        case .connectionTimeout: .connectionTimeout
        case .localHost, .localHostSuspend: .localHostTerminated
        case .remoteHost: .remoteUserTerminated
        case .authenticationFailure: DisconnectReason(rawValue: 0x05)  // Authentication Failure
        default: nil
        }
    }

    private static let names = ["unspecified", "connection timeout", "terminated by local host",
                                "terminated by remote host", "authentication failure", "local host suspend"]

    public var description: String {
        Int(rawValue) < Self.names.count ? Self.names[Int(rawValue)] : "reason \(rawValue)"
    }
}
