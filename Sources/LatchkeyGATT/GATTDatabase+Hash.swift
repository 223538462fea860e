import LatchkeyATT

/// One attribute as a client's attribute cache sees it: its handle, its type, and, for a
/// declaration, its value (the service UUID; the characteristic's properties, value handle
/// and UUID). Two databases with the same layout can share a client's cache; where their
/// layouts differ is the range a Service Changed indication names.
public struct GATTLayoutEntry: Hashable, Sendable {
    public var handle: UInt16
    public var type: BluetoothUUID
    /// The value of a service, include or characteristic declaration, or of an Extended
    /// Properties descriptor; nil for every other attribute (values are not structure).
    public var declaration: [UInt8]?
    /// A service declaration's last handle.
    public var groupEnd: UInt16?
}

extension GATTDatabase {
    /// Attribute types whose handle, type and value enter the Database Hash (Vol 3 Part G
    /// 7.3.1): service, include and characteristic declarations, Extended Properties.
    static let hashedWithValue: Set<BluetoothUUID> = [
        .primaryService, .secondaryService, .include, .characteristic, .characteristicExtendedProperties,
    ]
    /// Types whose handle and type only enter the hash: User Description, CCCD, SCCD,
    /// Presentation Format, Aggregate Format (0x2901–0x2905).
    static let hashedWithoutValue: Set<BluetoothUUID> = [
        .characteristicUserDescription, .clientCharacteristicConfiguration, .serverCharacteristicConfiguration,
        BluetoothUUID(0x2904), BluetoothUUID(0x2905),
    ]

    /// The message the Database Hash is computed over (7.3.1): for each hashed attribute in
    /// handle order, its handle and 16-bit type little-endian, then its value where it counts.
    public static func hashInput(of layout: [GATTLayoutEntry]) -> [UInt8] {
        var m: [UInt8] = []
        for e in layout {
            let withValue = hashedWithValue.contains(e.type)
            guard withValue || hashedWithoutValue.contains(e.type) else { continue }
            m.append(UInt8(e.handle & 0xFF)); m.append(UInt8(e.handle >> 8))
            e.type.append(to: &m)
            if withValue { m += e.declaration ?? [] }
        }
        return m
    }

    /// The Database Hash characteristic's value for `layout`: AES-CMAC with a zero key over
    /// its `hashInput` (7.3.1), least significant octet first like every multi-octet field
    /// on the air.
    public static func hash(of layout: [GATTLayoutEntry]) -> [UInt8] {
        Array(AESCMAC.mac(key: [UInt8](repeating: 0, count: 16), message: hashInput(of: layout)).reversed())
    }

    /// This database's hash input.
    public var hashInput: [UInt8] { Self.hashInput(of: layout) }

    /// This database's hash, computed once per added or removed service.
    public var hash: [UInt8] {
        if let cachedHash { return cachedHash }
        let h = Self.hash(of: layout)
        cachedHash = h
        return h
    }

    /// The structure of the database, attribute by attribute.
    public var layout: [GATTLayoutEntry] {
        attributes.map { a in
            var groupEnd: UInt16?
            if case .service(let end) = a.kind { groupEnd = end }
            return GATTLayoutEntry(handle: a.handle, type: a.type,
                                   declaration: Self.hashedWithValue.contains(a.type) ? a.value : nil, groupEnd: groupEnd)
        }
    }

    /// The handle range a Service Changed indication must name for a client whose cache
    /// holds `old` when the database now is `new`; nil when nothing a cache holds changed.
    ///
    /// It runs from the first differing attribute to the last, then widens to whole
    /// services (of either layout) it touches: a client re-discovers the services that
    /// overlap the range (Vol 3 Part G 2.5.2), so a characteristic appended behind a
    /// service's old end still makes that service's range part of it.
    public static func changedRange(from old: [GATTLayoutEntry], to new: [GATTLayoutEntry]) -> ClosedRange<UInt16>? {
        var i = 0
        while i < old.count, i < new.count, old[i] == new[i] { i += 1 }
        if i == old.count && i == new.count { return nil }
        var j = old.count - 1, k = new.count - 1
        while j >= i, k >= i, old[j] == new[k] { j -= 1; k -= 1 }
        var bounds: [UInt16] = []
        if j >= i { bounds += [old[i].handle, old[j].handle] }
        if k >= i { bounds += [new[i].handle, new[k].handle] }
        var lo = bounds.min()!, hi = bounds.max()!
        let groups = (old + new).compactMap { e in e.groupEnd.map { e.handle...$0 } }
        var widened = true
        while widened {
            widened = false
            for g in groups where g.overlaps(lo...hi) && (g.lowerBound < lo || g.upperBound > hi) {
                lo = min(lo, g.lowerBound); hi = max(hi, g.upperBound)
                widened = true
            }
        }
        return lo...hi
    }
}
