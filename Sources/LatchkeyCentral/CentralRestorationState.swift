import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyTransport

/// What a central manager preserves (Core Bluetooth's CBCentralManagerRestoredState*
/// keys): the scan it was running, the peripherals it was connecting to or connected to
/// with their connect options, and for each the attribute cache — services,
/// characteristics and descriptors with their handles, and which characteristics were
/// subscribed — so that a relaunched agent resumes its GATT setup where it stopped instead
/// of discovering again.
public struct CentralRestorationState: PreservedState {
    public static let role = RestorationRole.central
    public static let version: UInt32 = 1

    /// The scan under way (CBCentralManagerRestoredStateScanServicesKey and ...ScanOptionsKey).
    public var scan: PreservedScan?
    /// Peripherals pending or connected (CBCentralManagerRestoredStatePeripheralsKey).
    public var peripherals: [PreservedPeripheral]

    public init(scan: PreservedScan? = nil, peripherals: [PreservedPeripheral] = []) {
        self.scan = scan
        self.peripherals = peripherals
    }

    public var hasPendingWork: Bool { scan != nil || !peripherals.isEmpty }
}

public struct PreservedScan: Codable, Hashable, Sendable {
    /// nil: every advertiser.
    public var services: [PreservedUUID]?
    public var allowDuplicates: Bool
    public var active: Bool
    public var durationNanoseconds: Int64

    init(services: [BluetoothUUID]?, options: ScanOptions) {
        self.services = services?.map(PreservedUUID.init)
        allowDuplicates = options.allowDuplicates
        active = options.active
        durationNanoseconds = options.duration.nanoseconds
    }

    public var serviceUUIDs: [BluetoothUUID]? { services?.map(\.uuid) }
    public var options: ScanOptions {
        ScanOptions(allowDuplicates: allowDuplicates, duration: .nanoseconds(durationNanoseconds), active: active)
    }
}

/// One peripheral with its outstanding request or its link, and its attribute cache.
public struct PreservedPeripheral: Codable, Hashable, Sendable {
    public var address: UInt64
    public var addressKind: UInt8
    public var name: String?
    /// Connected when preserved (else a connect request was pending).
    public var connected: Bool
    public var options: ConnectOptions
    /// The link it was connected over and the ATT MTU negotiated on it: a relaunched manager
    /// that finds the same link still up adopts it without exchanging the MTU again
    /// (a client sends Exchange MTU once per connection, Vol 3 Part F 3.4.2.1).
    public var linkID: UInt64?
    public var mtu: Int?
    /// nil until services were discovered.
    public var services: [PreservedRemoteService]?
    /// The peer's Database Hash the cache was made against: a relaunch that reads another
    /// discovers again instead of trusting the cache (Vol 3 Part G 2.5.2.1).
    public var databaseHash: [UInt8]?
    /// Where the peer's Generic Attribute service is, and whether Service Changed
    /// indications were on for the preserved link.
    public var genericAttribute: PreservedGenericAttribute?

    public var identifier: BluetoothAddress {
        BluetoothAddress(address, kind: BluetoothAddress.Kind(rawValue: addressKind) ?? .public)
    }
}

public struct PreservedGenericAttribute: Codable, Hashable, Sendable {
    public var start: UInt16
    public var end: UInt16
    public var serviceChanged: UInt16?
    public var serviceChangedConfiguration: UInt16?
    public var clientFeatures: UInt16?
    /// Service Changed indications were enabled on the preserved link.
    public var subscribed: Bool
}

public struct PreservedRemoteService: Codable, Hashable, Sendable {
    public var uuid: PreservedUUID
    public var startHandle: UInt16
    public var endHandle: UInt16
    /// nil until its characteristics were discovered.
    public var characteristics: [PreservedRemoteCharacteristic]?
}

public struct PreservedRemoteCharacteristic: Codable, Hashable, Sendable {
    public var uuid: PreservedUUID
    public var properties: UInt8
    public var declarationHandle: UInt16
    public var valueHandle: UInt16
    public var endHandle: UInt16
    /// Subscribed on the preserved link (the server's CCCD for this client).
    public var notifying: Bool
    /// nil until its descriptors were discovered.
    public var descriptors: [PreservedRemoteDescriptor]?
}

public struct PreservedRemoteDescriptor: Codable, Hashable, Sendable {
    public var uuid: PreservedUUID
    public var handle: UInt16
}

// MARK: Between the proxies and their preserved form

extension PreservedPeripheral {
    init(_ p: Peripheral, options: ConnectOptions) {
        address = p.identifier.value
        addressKind = p.identifier.kind.rawValue
        name = p.name
        connected = p.state == .connected
        self.options = options
        linkID = connected ? p.bearer?.link.id.rawValue : nil
        mtu = connected ? p.client?.mtu : nil
        services = p.services?.map(PreservedRemoteService.init)
        databaseHash = p.databaseHash
        genericAttribute = p.genericAttribute.map { g in
            PreservedGenericAttribute(start: g.service.lowerBound, end: g.service.upperBound,
                                      serviceChanged: g.serviceChanged,
                                      serviceChangedConfiguration: g.serviceChangedConfiguration,
                                      clientFeatures: g.clientFeatures, subscribed: connected && p.serviceChangedSubscribed)
        }
    }
}

extension PreservedRemoteService {
    init(_ s: RemoteService) {
        uuid = PreservedUUID(s.uuid)
        startHandle = s.startHandle
        endHandle = s.endHandle
        characteristics = s.characteristics?.map(PreservedRemoteCharacteristic.init)
    }
}

extension PreservedRemoteCharacteristic {
    init(_ c: RemoteCharacteristic) {
        uuid = PreservedUUID(c.uuid)
        properties = c.properties.rawValue
        declarationHandle = c.declarationHandle
        valueHandle = c.valueHandle
        endHandle = c.endHandle
        notifying = c.isNotifying
        descriptors = c.descriptors?.map { PreservedRemoteDescriptor(uuid: PreservedUUID($0.uuid), handle: $0.handle) }
    }
}

extension Peripheral {
    /// Rebuilds the attribute cache from its preserved form. Subscriptions are taken as
    /// preserved; the manager clears them when the link they were made on is gone.
    func restoreCache(_ peripheral: PreservedPeripheral) {
        databaseHash = peripheral.databaseHash
        if let g = peripheral.genericAttribute, g.start <= g.end {
            genericAttribute = GenericAttributeCache(service: g.start...g.end, serviceChanged: g.serviceChanged,
                                                     serviceChangedConfiguration: g.serviceChangedConfiguration,
                                                     clientFeatures: g.clientFeatures)
            serviceChangedSubscribed = g.subscribed
        }
        services = peripheral.services?.map { ps in
            let service = RemoteService(DiscoveredService(uuid: ps.uuid.uuid, startHandle: ps.startHandle,
                                                          endHandle: ps.endHandle), peripheral: self)
            service.characteristics = ps.characteristics?.map { pc in
                let c = RemoteCharacteristic(
                    DiscoveredCharacteristic(uuid: pc.uuid.uuid, properties: CharacteristicProperties(rawValue: pc.properties),
                                             declarationHandle: pc.declarationHandle, valueHandle: pc.valueHandle,
                                             endHandle: pc.endHandle),
                    service: service)
                c.isNotifying = pc.notifying
                c.descriptors = pc.descriptors?.map {
                    RemoteDescriptor(DiscoveredDescriptor(uuid: $0.uuid.uuid, handle: $0.handle), characteristic: c)
                }
                return c
            }
            return service
        }
    }
}
