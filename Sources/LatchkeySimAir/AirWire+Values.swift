import LatchkeyATT
import LatchkeyTransport

/// Wire forms of the seam's value types. Advertising data travels field by field (not as
/// AD structures), so nothing is shortened on the way: what the agent asked for is
/// exactly what the air-side controller gets.
extension WireWriter {
    mutating func address(_ a: BluetoothAddress) {
        u64(a.value)
        u8(a.kind.rawValue)
    }

    mutating func linkID(_ id: LinkID) { u64(id.rawValue) }

    mutating func radioState(_ s: RadioState) { u8(UInt8(WireTables.radioStates.firstIndex(of: s)!)) }

    mutating func role(_ r: LinkRole) { u8(r == .central ? 0 : 1) }

    mutating func uuid(_ u: BluetoothUUID) { data(u.littleEndianBytes) }

    mutating func advertisingData(_ d: AdvertisingData) {
        optional(d.flags) { $0.u8($1) }
        list(d.serviceUUIDs) { $0.uuid($1) }
        optional(d.localName) { $0.string($1) }
        optional(d.manufacturerData) { $0.data($1) }
    }

    mutating func advertisement(_ a: Advertisement) {
        advertisingData(a.data)
        optional(a.scanResponse) { $0.advertisingData($1) }
        duration(a.interval)
        bool(a.connectable)
    }

    mutating func scanParameters(_ p: ScanParameters) {
        bool(p.active); duration(p.interval); duration(p.window); bool(p.filterDuplicates)
    }

    mutating func connectionParameters(_ p: ConnectionParameters) {
        duration(p.scanInterval); duration(p.scanWindow); duration(p.connectionInterval); duration(p.supervisionTimeout)
    }

    mutating func report(_ r: AdvertisementReport) {
        address(r.address); advertisingData(r.data); u8(UInt8(bitPattern: r.rssi)); bool(r.connectable)
    }

    mutating func status(_ s: ControllerStatus) {
        radioState(s.state); bool(s.isAdvertising); bool(s.isScanning)
        list(s.pendingConnections) { $0.address($1) }
    }

    mutating func linkDescription(_ l: LinkDescription) {
        linkID(l.id); address(l.peer); role(l.role)
        u16(UInt16(clamping: l.maximumTransmissionUnit)); u16(UInt16(clamping: l.window))
        u32(l.connectionInterval.map { UInt32(clamping: max(1, $0.nanoseconds / 1_000)) } ?? 0)
    }

    mutating func transportError(_ e: TransportError) {
        u8(UInt8(WireTables.errorCodes.firstIndex(of: e.code) ?? WireTables.errorCodes.firstIndex(of: .failed)!))
        string(e.message)
    }

    mutating func device(_ d: DeviceSnapshot) {
        address(d.address); double(d.position); bool(d.attached); status(d.status)
        list(d.links) { w, l in w.linkID(l.id); w.address(l.peer); w.role(l.role); w.bool(l.claimed) }
    }
}

extension WireReader {
    mutating func address() throws(AirProtocolError) -> BluetoothAddress {
        let value = try u64()
        guard value <= 0xFFFF_FFFF_FFFF else { throw AirProtocolError(.invalidValue, "address wider than 48 bits") }
        guard let kind = BluetoothAddress.Kind(rawValue: try u8()) else {
            throw AirProtocolError(.invalidValue, "address kind")
        }
        return BluetoothAddress(value, kind: kind)
    }

    mutating func linkID() throws(AirProtocolError) -> LinkID { LinkID(try u64()) }

    mutating func radioState() throws(AirProtocolError) -> RadioState {
        try WireTables.pick(WireTables.radioStates, try u8(), "radio state")
    }

    mutating func role() throws(AirProtocolError) -> LinkRole {
        try WireTables.pick([.central, .peripheral], try u8(), "link role")
    }

    mutating func uuid() throws(AirProtocolError) -> BluetoothUUID {
        let bytes = try data()
        guard let u = BluetoothUUID(littleEndian: bytes) else {
            throw AirProtocolError(.invalidValue, "UUID of \(bytes.count) bytes")
        }
        return u
    }

    mutating func advertisingData() throws(AirProtocolError) -> AdvertisingData {
        AdvertisingData(flags: try optional { r throws(AirProtocolError) in try r.u8() },
                        serviceUUIDs: try list { r throws(AirProtocolError) in try r.uuid() },
                        localName: try optional { r throws(AirProtocolError) in try r.string() },
                        manufacturerData: try optional { r throws(AirProtocolError) in try r.data() })
    }

    mutating func advertisement() throws(AirProtocolError) -> Advertisement {
        Advertisement(data: try advertisingData(),
                      scanResponse: try optional { r throws(AirProtocolError) in try r.advertisingData() },
                      interval: try duration(), connectable: try bool())
    }

    mutating func scanParameters() throws(AirProtocolError) -> ScanParameters {
        ScanParameters(active: try bool(), interval: try duration(), window: try duration(),
                       filterDuplicates: try bool())
    }

    mutating func connectionParameters() throws(AirProtocolError) -> ConnectionParameters {
        ConnectionParameters(scanInterval: try duration(), scanWindow: try duration(),
                             connectionInterval: try duration(), supervisionTimeout: try duration())
    }

    mutating func report() throws(AirProtocolError) -> AdvertisementReport {
        AdvertisementReport(address: try address(), data: try advertisingData(),
                            rssi: Int8(bitPattern: try u8()), connectable: try bool())
    }

    mutating func status() throws(AirProtocolError) -> ControllerStatus {
        ControllerStatus(state: try radioState(), isAdvertising: try bool(), isScanning: try bool(),
                         pendingConnections: try list { r throws(AirProtocolError) in try r.address() })
    }

    mutating func linkDescription() throws(AirProtocolError) -> LinkDescription {
        let (id, peer, role) = (try linkID(), try address(), try role())
        let (mtu, window, interval) = (Int(try u16()), Int(try u16()), try u32())
        return LinkDescription(id: id, peer: peer, role: role, maximumTransmissionUnit: mtu, window: window,
                               connectionInterval: interval == 0 ? nil : .microseconds(Int64(interval)))
    }

    mutating func transportError() throws(AirProtocolError) -> TransportError {
        TransportError(try WireTables.pick(WireTables.errorCodes, try u8(), "error code"), try string())
    }

    mutating func device() throws(AirProtocolError) -> DeviceSnapshot {
        DeviceSnapshot(address: try address(), position: try double(), attached: try bool(), status: try status(),
                       links: try list { r throws(AirProtocolError) in
                           DeviceSnapshot.Link(id: try r.linkID(), peer: try r.address(), role: try r.role(),
                                               claimed: try r.bool())
                       })
    }
}

/// Enumerations that travel as an index into a fixed table (append only: the index is the wire value).
enum WireTables {
    static let radioStates: [RadioState] = [.unknown, .unsupported, .unauthorized, .poweredOff, .poweredOn]
    static let errorCodes: [TransportError.Code] = [.poweredOff, .unsupported, .invalidParameters, .busy, .failed]

    static func pick<T>(_ table: [T], _ index: UInt8, _ what: String) throws(AirProtocolError) -> T {
        guard Int(index) < table.count else { throw AirProtocolError(.invalidValue, "\(what) \(index)") }
        return table[Int(index)]
    }
}
