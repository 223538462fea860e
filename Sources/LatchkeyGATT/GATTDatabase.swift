import LatchkeyATT

/// A service as an application defines it, before handles are assigned.
public struct GATTService: Sendable, Equatable {
    public var uuid: BluetoothUUID
    public var isPrimary: Bool
    public var characteristics: [GATTCharacteristic]
    public init(uuid: BluetoothUUID, isPrimary: Bool = true, characteristics: [GATTCharacteristic]) {
        self.uuid = uuid; self.isPrimary = isPrimary; self.characteristics = characteristics
    }
}

public struct GATTCharacteristic: Sendable, Equatable {
    public var uuid: BluetoothUUID
    public var properties: CharacteristicProperties
    public var permissions: AttributePermissions
    /// A cached value the server answers reads with. `nil` makes the value dynamic: every
    /// read goes to the server's delegate (Core Bluetooth's `value: nil` characteristic).
    public var value: [UInt8]?
    public var descriptors: [GATTDescriptor]

    public init(uuid: BluetoothUUID, properties: CharacteristicProperties, permissions: AttributePermissions,
                value: [UInt8]? = nil, descriptors: [GATTDescriptor] = []) {
        self.uuid = uuid; self.properties = properties; self.permissions = permissions
        self.value = value; self.descriptors = descriptors
    }
}

public struct GATTDescriptor: Sendable, Equatable {
    public var uuid: BluetoothUUID
    public var permissions: AttributePermissions
    public var value: [UInt8]
    public init(uuid: BluetoothUUID, permissions: AttributePermissions = .read, value: [UInt8]) {
        self.uuid = uuid; self.permissions = permissions; self.value = value
    }
    /// Characteristic User Description (0x2901), read-only text.
    public static func userDescription(_ text: String) -> GATTDescriptor {
        GATTDescriptor(uuid: .characteristicUserDescription, value: Array(text.utf8))
    }
}

/// One attribute of the database.
public struct GATTAttribute: Sendable {
    public enum Kind: Sendable, Equatable {
        case service(endGroup: UInt16)
        case characteristicDeclaration(valueHandle: UInt16)
        case characteristicValue(properties: CharacteristicProperties, dynamic: Bool)
        /// A CCCD; its value lives per connection, not here.
        case clientConfiguration(valueHandle: UInt16, properties: CharacteristicProperties)
        case descriptor
    }
    public let handle: UInt16
    public let type: BluetoothUUID
    public let permissions: AttributePermissions
    public var value: [UInt8]
    public let kind: Kind
}

/// Handles the database assigned to one service, for the application to address them.
public struct GATTServiceHandles: Sendable, Equatable {
    public var service: UInt16
    public var endGroup: UInt16
    /// Value handle of each characteristic, in definition order.
    public var characteristicValues: [UInt16]
    /// CCCD handle of each characteristic (nil when it neither notifies nor indicates).
    public var clientConfigurations: [UInt16?]
}

public struct GATTDatabaseError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The attribute table. Handles are assigned in the order services are added, starting at
/// 0x0001, or at a requested start handle, so a database rebuilt from the same definitions
/// (or restored with the handles it had) has the same handles and a client's cache stays valid.
public final class GATTDatabase {
    /// Sorted by handle.
    public private(set) var attributes: [GATTAttribute] = []
    /// The Database Hash of the current structure (GATTDatabase+Hash.swift), computed once
    /// per added or removed service; value writes leave it alone (values are not hashed).
    var cachedHash: [UInt8]?

    public init() {}

    /// A database with the same attributes and hash, sharing their storage until either
    /// database changes (the attribute array is copy-on-write): one built once can be served
    /// afresh many times at the cost of the attributes a client writes (the fuzz target
    /// `fuzz-gatt-server` serves every input from a copy of one fixture).
    public func copy() -> GATTDatabase {
        let copy = GATTDatabase()
        copy.attributes = attributes
        copy.cachedHash = cachedHash
        return copy
    }

    /// The first free handle after the last attribute.
    public var nextHandle: UInt16 { (attributes.last?.handle ?? 0) + 1 }

    @discardableResult
    public func add(_ service: GATTService, startHandle: UInt16? = nil) throws(GATTDatabaseError) -> GATTServiceHandles {
        let start = startHandle ?? nextHandle
        let count = 1 + service.characteristics.reduce(0) { n, c in
            n + 2 + c.descriptors.count + (c.properties.isDisjoint(with: [.notify, .indicate]) ? 0 : 1)
        }
        guard start >= 1, Int(start) + count - 1 <= Int(UInt16.max) else {
            throw GATTDatabaseError(message: "service \(service.uuid) does not fit at handle \(start)")
        }
        let end = start + UInt16(count - 1)
        if attributes.contains(where: { $0.handle >= start && $0.handle <= end }) {
            throw GATTDatabaseError(message: "handles \(start)...\(end) for service \(service.uuid) are taken")
        }
        var new: [GATTAttribute] = []
        var h = start
        new.append(GATTAttribute(handle: h, type: service.isPrimary ? .primaryService : .secondaryService,
                                 permissions: .read, value: service.uuid.littleEndianBytes,
                                 kind: .service(endGroup: end)))
        var values: [UInt16] = [], cccds: [UInt16?] = []
        for c in service.characteristics {
            let decl = h + 1, valueHandle = h + 2
            var declValue: [UInt8] = [c.properties.rawValue, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)]
            c.uuid.append(to: &declValue)
            new.append(GATTAttribute(handle: decl, type: .characteristic, permissions: .read, value: declValue,
                                     kind: .characteristicDeclaration(valueHandle: valueHandle)))
            new.append(GATTAttribute(handle: valueHandle, type: c.uuid, permissions: c.permissions,
                                     value: c.value ?? [],
                                     kind: .characteristicValue(properties: c.properties, dynamic: c.value == nil)))
            h = valueHandle
            values.append(valueHandle)
            if !c.properties.isDisjoint(with: [.notify, .indicate]) {
                h += 1
                new.append(GATTAttribute(handle: h, type: .clientConfigurationDescriptor, permissions: .readWrite,
                                         value: [0, 0],
                                         kind: .clientConfiguration(valueHandle: valueHandle, properties: c.properties)))
                cccds.append(h)
            } else {
                cccds.append(nil)
            }
            for d in c.descriptors {
                h += 1
                new.append(GATTAttribute(handle: h, type: d.uuid, permissions: d.permissions, value: d.value,
                                         kind: .descriptor))
            }
        }
        attributes.append(contentsOf: new)
        attributes.sort { $0.handle < $1.handle }
        cachedHash = nil
        return GATTServiceHandles(service: start, endGroup: end, characteristicValues: values, clientConfigurations: cccds)
    }

    /// Removes the service whose declaration is at `handle`. Other handles do not move.
    public func removeService(at handle: UInt16) {
        guard let a = attribute(at: handle), case .service(let end) = a.kind else { return }
        attributes.removeAll { $0.handle >= handle && $0.handle <= end }
        cachedHash = nil
    }

    /// Binary search: the index of `handle`, or of the first attribute after it.
    @inline(__always)
    func lowerBound(_ handle: UInt16) -> Int {
        var lo = 0, hi = attributes.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if attributes[mid].handle < handle { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    public func attribute(at handle: UInt16) -> GATTAttribute? {
        let i = lowerBound(handle)
        return i < attributes.count && attributes[i].handle == handle ? attributes[i] : nil
    }

    /// Replaces a stored value (used for cached characteristic values and executed writes).
    public func setValue(_ value: [UInt8], at handle: UInt16) {
        let i = lowerBound(handle)
        guard i < attributes.count, attributes[i].handle == handle else { return }
        attributes[i].value = value
    }

    /// Attributes with handles in `range`, in order.
    public func attributes(in range: ClosedRange<UInt16>) -> ArraySlice<GATTAttribute> {
        let lo = lowerBound(range.lowerBound)
        var hi = lo
        while hi < attributes.count && attributes[hi].handle <= range.upperBound { hi += 1 }
        return attributes[lo..<hi]
    }
}

extension BluetoothUUID {
    static let clientConfigurationDescriptor = BluetoothUUID.clientCharacteristicConfiguration
}
