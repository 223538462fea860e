import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyTransport

/// What a peripheral manager preserves (Core Bluetooth's CBPeripheralManagerRestoredState*
/// keys): the advertisement, the published services with the handles they had — so that a
/// central's attribute cache stays valid across a restart — and the connected centrals with
/// their CCCD values and ATT MTU, so that a link that survived the process keeps its
/// subscriptions.
public struct PeripheralRestorationState: PreservedState {
    public static let role = RestorationRole.peripheral
    public static let version: UInt32 = 1

    public var advertisement: PreservedAdvertisement?
    public var services: [PreservedLocalService]
    public var centrals: [PreservedCentral]
    /// The Database Hash of the structure connected centrals were last told of (Generic
    /// Attribute service included). A relaunch that publishes another structure tells them
    /// with a Service Changed indication. nil in a state written before the Generic Attribute
    /// service existed: that database was the services alone.
    public var databaseHash: [UInt8]?

    public init(advertisement: PreservedAdvertisement? = nil, services: [PreservedLocalService] = [],
                centrals: [PreservedCentral] = [], databaseHash: [UInt8]? = nil) {
        self.advertisement = advertisement
        self.services = services
        self.centrals = centrals
        self.databaseHash = databaseHash
    }

    public var hasPendingWork: Bool { advertisement != nil || !services.isEmpty || !centrals.isEmpty }
}

public struct PreservedAdvertisement: Codable, Hashable, Sendable {
    public var flags: UInt8?
    public var serviceUUIDs: [PreservedUUID]
    public var localName: String?
    public var manufacturerData: [UInt8]?
    public var scanResponse: PreservedAdvertisingData?
    public var intervalNanoseconds: Int64
    public var connectable: Bool

    init(_ a: Advertisement) {
        flags = a.data.flags
        serviceUUIDs = a.data.serviceUUIDs.map(PreservedUUID.init)
        localName = a.data.localName
        manufacturerData = a.data.manufacturerData
        scanResponse = a.scanResponse.map(PreservedAdvertisingData.init)
        intervalNanoseconds = a.interval.nanoseconds
        connectable = a.connectable
    }

    public var advertisement: Advertisement {
        Advertisement(data: AdvertisingData(flags: flags, serviceUUIDs: serviceUUIDs.map(\.uuid), localName: localName,
                                            manufacturerData: manufacturerData),
                      scanResponse: scanResponse?.data, interval: .nanoseconds(intervalNanoseconds),
                      connectable: connectable)
    }
}

public struct PreservedAdvertisingData: Codable, Hashable, Sendable {
    public var flags: UInt8?
    public var serviceUUIDs: [PreservedUUID]
    public var localName: String?
    public var manufacturerData: [UInt8]?

    init(_ d: AdvertisingData) {
        flags = d.flags
        serviceUUIDs = d.serviceUUIDs.map(PreservedUUID.init)
        localName = d.localName
        manufacturerData = d.manufacturerData
    }

    var data: AdvertisingData {
        AdvertisingData(flags: flags, serviceUUIDs: serviceUUIDs.map(\.uuid), localName: localName,
                        manufacturerData: manufacturerData)
    }
}

/// A published service: its definition and the handle it started at.
public struct PreservedLocalService: Codable, Hashable, Sendable {
    public var uuid: PreservedUUID
    public var isPrimary: Bool
    public var startHandle: UInt16
    public var characteristics: [PreservedLocalCharacteristic]

    init(_ s: LocalService) {
        uuid = PreservedUUID(s.definition.uuid)
        isPrimary = s.definition.isPrimary
        startHandle = s.handles.service
        characteristics = s.definition.characteristics.map(PreservedLocalCharacteristic.init)
    }

    public var definition: GATTService {
        GATTService(uuid: uuid.uuid, isPrimary: isPrimary, characteristics: characteristics.map(\.definition))
    }
}

public struct PreservedLocalCharacteristic: Codable, Hashable, Sendable {
    public var uuid: PreservedUUID
    public var properties: UInt8
    public var permissions: UInt16
    /// nil: a dynamic value, asked of the delegate at each read.
    public var value: [UInt8]?
    public var descriptors: [PreservedLocalDescriptor]

    init(_ c: GATTCharacteristic) {
        uuid = PreservedUUID(c.uuid)
        properties = c.properties.rawValue
        permissions = c.permissions.rawValue
        value = c.value
        descriptors = c.descriptors.map {
            PreservedLocalDescriptor(uuid: PreservedUUID($0.uuid), permissions: $0.permissions.rawValue, value: $0.value)
        }
    }

    var definition: GATTCharacteristic {
        GATTCharacteristic(uuid: uuid.uuid, properties: CharacteristicProperties(rawValue: properties),
                           permissions: AttributePermissions(rawValue: permissions), value: value,
                           descriptors: descriptors.map {
                               GATTDescriptor(uuid: $0.uuid.uuid, permissions: AttributePermissions(rawValue: $0.permissions),
                                              value: $0.value)
                           })
    }
}

public struct PreservedLocalDescriptor: Codable, Hashable, Sendable {
    public var uuid: PreservedUUID
    public var permissions: UInt16
    public var value: [UInt8]
}

/// A connected central: its link, the MTU negotiated on it, its CCCD values, its Client
/// Supported Features and the Service Changed range it has not confirmed.
public struct PreservedCentral: Codable, Hashable, Sendable {
    public var address: UInt64
    public var addressKind: UInt8
    public var linkID: UInt64
    public var mtu: Int
    /// CCCD values by characteristic value handle (non-zero ones only).
    public var configurations: [PreservedClientConfiguration]
    /// Client Supported Features bits (Vol 3 Part G 7.2); nil when none.
    public var clientFeatures: UInt8?
    /// A Service Changed indication not yet confirmed: sent again after a relaunch.
    public var serviceChange: PreservedHandleRange?

    init(_ c: Central) {
        address = c.identifier.value
        addressKind = c.identifier.kind.rawValue
        linkID = c.linkID.rawValue
        mtu = c.server.mtu
        configurations = c.server.clientConfigurations.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
            .map { PreservedClientConfiguration(valueHandle: $0.key, value: $0.value.rawValue) }
        clientFeatures = c.server.clientFeatures.isEmpty ? nil : c.server.clientFeatures.rawValue
        serviceChange = c.serviceChange.unconfirmed.map(PreservedHandleRange.init)
    }
}

public struct PreservedHandleRange: Codable, Hashable, Sendable {
    public var start: UInt16
    public var end: UInt16
    init(_ r: ClosedRange<UInt16>) { start = r.lowerBound; end = r.upperBound }
    /// nil for a range no server could have sent (start 0 or past the end).
    var range: ClosedRange<UInt16>? { start >= 1 && start <= end ? start...end : nil }
}

public struct PreservedClientConfiguration: Codable, Hashable, Sendable {
    public var valueHandle: UInt16
    public var value: UInt16
}
