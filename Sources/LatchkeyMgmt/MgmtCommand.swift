import LatchkeyTransport

/// The mgmt commands Latchkey sends, with their parameters (mgmt-api.txt). Each encodes
/// to the exact bytes the kernel expects; replies decode with the types in MgmtReplies.swift.
public enum MgmtCommand: Hashable, Sendable {
    case readControllerIndexList
    case readControllerInfo
    case setPowered(Bool)
    case setConnectable(Bool)
    case setBondable(Bool)
    case setLowEnergy(Bool)
    /// Ends the link to a connected device (Disconnect, 0x0014).
    case disconnect(BluetoothAddress)
    case getConnections
    case startDiscovery(DiscoveryTypes)
    case stopDiscovery(DiscoveryTypes)
    case addDevice(BluetoothAddress, AddDeviceAction)
    case removeDevice(BluetoothAddress)
    case addAdvertising(AdvertisingInstance)
    /// Instance 0 removes every instance.
    case removeAdvertising(instance: UInt8)
    case setDefaultSystemConfiguration([SystemParameter])

    /// Add Device's Action parameter.
    public struct AddDeviceAction: RawRepresentable, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let backgroundScan = Self(rawValue: 0)
        public static let allowIncoming = Self(rawValue: 1)
        /// Connect whenever the device is seen advertising, with no timeout, until removed.
        public static let autoConnect = Self(rawValue: 2)
    }

    /// Start/Stop Discovery's Address_Type: a bit per transport.
    public struct DiscoveryTypes: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let bredr = Self(rawValue: 1 << 0)
        public static let lePublic = Self(rawValue: 1 << 1)
        public static let leRandom = Self(rawValue: 1 << 2)
        /// 6: LE public and random.
        public static let lowEnergy: Self = [.lePublic, .leRandom]
    }

    public var opcode: MgmtOpcode {
        switch self {
        case .readControllerIndexList: .readControllerIndexList
        case .readControllerInfo: .readControllerInfo
        case .setPowered: .setPowered
        case .setConnectable: .setConnectable
        case .setBondable: .setBondable
        case .setLowEnergy: .setLowEnergy
        case .disconnect: .disconnect
        case .getConnections: .getConnections
        case .startDiscovery: .startDiscovery
        case .stopDiscovery: .stopDiscovery
        case .addDevice: .addDevice
        case .removeDevice: .removeDevice
        case .addAdvertising: .addAdvertising
        case .removeAdvertising: .removeAdvertising
        case .setDefaultSystemConfiguration: .setDefaultSystemConfiguration
        }
    }

    public var parameters: [UInt8] {
        var w = ByteWriter()
        switch self {
        case .readControllerIndexList, .readControllerInfo, .getConnections:
            break
        case .setPowered(let on), .setConnectable(let on), .setBondable(let on), .setLowEnergy(let on):
            w.u8(on ? 1 : 0)
        case .disconnect(let address), .removeDevice(let address):
            MgmtDeviceAddress(address).write(to: &w)
        case .startDiscovery(let types), .stopDiscovery(let types):
            w.u8(types.rawValue)
        case .addDevice(let address, let action):
            MgmtDeviceAddress(address).write(to: &w)
            w.u8(action.rawValue)
        case .addAdvertising(let instance):
            instance.write(to: &w)
        case .removeAdvertising(let instance):
            w.u8(instance)
        case .setDefaultSystemConfiguration(let parameters):
            for p in parameters { p.write(to: &w) }
        }
        return w.bytes
    }

    /// The command as sent to controller `index`.
    public func packet(index: MgmtIndex) -> MgmtPacket {
        MgmtPacket(code: opcode.rawValue, index: index, parameters: parameters)
    }
}
