import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers

/// A service on a connected peripheral (CBService).
public final class RemoteService {
    public let uuid: BluetoothUUID
    public let startHandle: UInt16
    public let endHandle: UInt16
    /// Nil until discovered.
    public internal(set) var characteristics: [RemoteCharacteristic]?
    public internal(set) weak var peripheral: Peripheral?
    /// The peripheral's database changed under it (`didModifyServices`): requests on it and
    /// its characteristics fail; discover again.
    public internal(set) var isInvalidated = false

    init(_ d: DiscoveredService, peripheral: Peripheral) {
        uuid = d.uuid; startHandle = d.startHandle; endHandle = d.endHandle; self.peripheral = peripheral
    }

    var discovered: DiscoveredService { DiscoveredService(uuid: uuid, startHandle: startHandle, endHandle: endHandle) }

    public func characteristic(_ uuid: BluetoothUUID) -> RemoteCharacteristic? {
        characteristics?.first { $0.uuid == uuid }
    }
}

/// A characteristic on a connected peripheral (CBCharacteristic).
public final class RemoteCharacteristic {
    public let uuid: BluetoothUUID
    public let properties: CharacteristicProperties
    public let declarationHandle: UInt16
    public let valueHandle: UInt16
    public let endHandle: UInt16
    /// The last value read or notified.
    public internal(set) var value: [UInt8]?
    /// Whether notifications or indications are on (CBCharacteristic.isNotifying).
    public internal(set) var isNotifying = false
    public internal(set) var descriptors: [RemoteDescriptor]?
    public internal(set) weak var service: RemoteService?
    /// Its service was invalidated (or is no longer held by anyone).
    public var isInvalidated: Bool { service?.isInvalidated ?? true }

    init(_ d: DiscoveredCharacteristic, service: RemoteService) {
        uuid = d.uuid; properties = d.properties; declarationHandle = d.declarationHandle
        valueHandle = d.valueHandle; endHandle = d.endHandle; self.service = service
    }

    var discovered: DiscoveredCharacteristic {
        DiscoveredCharacteristic(uuid: uuid, properties: properties, declarationHandle: declarationHandle,
                                 valueHandle: valueHandle, endHandle: endHandle)
    }

    /// The CCCD's handle, once descriptors are discovered.
    public var clientConfigurationHandle: UInt16? {
        descriptors?.first { $0.uuid == .clientCharacteristicConfiguration }?.handle
    }
}

/// A descriptor on a connected peripheral (CBDescriptor).
public final class RemoteDescriptor {
    public let uuid: BluetoothUUID
    public let handle: UInt16
    public internal(set) var value: [UInt8]?
    public internal(set) weak var characteristic: RemoteCharacteristic?

    init(_ d: DiscoveredDescriptor, characteristic: RemoteCharacteristic) {
        uuid = d.uuid; handle = d.handle; self.characteristic = characteristic
    }
}
