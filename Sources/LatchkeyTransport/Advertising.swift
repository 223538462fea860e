import LatchkeyATT

/// What a peripheral advertises, as the AD structures of Core Spec Supplement Part A.
public struct AdvertisingData: Hashable, Sendable {
    /// LE General Discoverable (0x02) | BR/EDR Not Supported (0x04).
    public static let defaultFlags: UInt8 = 0x06
    /// Legacy advertising data is at most 31 bytes (Core Vol 6 Part B 2.3.1.1).
    public static let legacyMaximumLength = 31

    public var flags: UInt8?
    public var serviceUUIDs: [BluetoothUUID]
    public var localName: String?
    public var manufacturerData: [UInt8]?

    public init(flags: UInt8? = AdvertisingData.defaultFlags, serviceUUIDs: [BluetoothUUID] = [],
                localName: String? = nil, manufacturerData: [UInt8]? = nil) {
        self.flags = flags
        self.serviceUUIDs = serviceUUIDs
        self.localName = localName
        self.manufacturerData = manufacturerData
    }

    // AD type codes (Bluetooth Assigned Numbers 2.3).
    enum ADType {
        static let flags: UInt8 = 0x01
        static let incomplete16: UInt8 = 0x02, complete16: UInt8 = 0x03
        static let incomplete128: UInt8 = 0x06, complete128: UInt8 = 0x07
        static let shortName: UInt8 = 0x08, completeName: UInt8 = 0x09
        static let manufacturer: UInt8 = 0xFF
    }

    /// The AD structures. A name that does not fit is shortened (type 0x08), as the spec allows.
    public func encoded(maximumLength: Int = legacyMaximumLength) -> [UInt8] {
        var out: [UInt8] = []
        func put(_ type: UInt8, _ payload: [UInt8]) {
            out.append(UInt8(payload.count + 1)); out.append(type); out += payload
        }
        if let flags { put(ADType.flags, [flags]) }
        let s16 = serviceUUIDs.filter { $0.wireLength == 2 }
        let s128 = serviceUUIDs.filter { $0.wireLength == 16 }
        if !s16.isEmpty { put(ADType.complete16, s16.flatMap { $0.littleEndianBytes }) }
        if !s128.isEmpty { put(ADType.complete128, s128.flatMap { $0.littleEndianBytes }) }
        if let m = manufacturerData { put(ADType.manufacturer, m) }
        if let name = localName {
            let bytes = Array(name.utf8)
            let room = maximumLength - out.count - 2
            if bytes.count <= room { put(ADType.completeName, bytes) }
            else if room > 0 { put(ADType.shortName, Array(bytes.prefix(room))) }
        }
        return out
    }

    /// Parses AD structures; unknown types are skipped, a structure running past the end is an error.
    public init(decoding bytes: [UInt8]) throws(TransportError) {
        self.init(flags: nil)
        var i = 0
        while i < bytes.count {
            let len = Int(bytes[i])
            if len == 0 { break }  // early termination is allowed (Core Supp. Part A 1.3)
            guard i + 1 + len <= bytes.count else {
                throw TransportError(.invalidParameters, "AD structure at offset \(i) runs past the end")
            }
            let type = bytes[i + 1]
            let payload = Array(bytes[(i + 2)..<(i + 1 + len)])
            switch type {
            case ADType.flags: flags = payload.first
            case ADType.incomplete16, ADType.complete16:
                var j = 0
                while j + 2 <= payload.count { serviceUUIDs.append(BluetoothUUID(littleEndian: payload[j..<j+2])!); j += 2 }
            case ADType.incomplete128, ADType.complete128:
                var j = 0
                while j + 16 <= payload.count { serviceUUIDs.append(BluetoothUUID(littleEndian: payload[j..<j+16])!); j += 16 }
            case ADType.shortName, ADType.completeName: localName = String(decoding: payload, as: UTF8.self)
            case ADType.manufacturer: manufacturerData = payload
            default: break
            }
            i += 1 + len
        }
    }
}

/// A connectable advertising set.
public struct Advertisement: Hashable, Sendable {
    public var data: AdvertisingData
    public var scanResponse: AdvertisingData?
    /// Advertising interval (Core Vol 6 Part B 4.4.2.2: 20 ms to 10.24 s).
    public var interval: Duration
    public var connectable: Bool

    public init(data: AdvertisingData, scanResponse: AdvertisingData? = nil,
                interval: Duration = .milliseconds(100), connectable: Bool = true) {
        self.data = data; self.scanResponse = scanResponse; self.interval = interval; self.connectable = connectable
    }
}

public struct ScanParameters: Hashable, Sendable {
    /// Active scanning sends scan requests and receives scan responses.
    public var active: Bool
    public var interval: Duration
    /// Listening time within each interval; equal to `interval` for a continuous scan.
    public var window: Duration
    /// When true, the controller reports each advertiser once per scan (HCI filter duplicates).
    public var filterDuplicates: Bool

    public init(active: Bool = true, interval: Duration = .milliseconds(60), window: Duration = .milliseconds(30),
                filterDuplicates: Bool = true) {
        self.active = active; self.interval = interval; self.window = window; self.filterDuplicates = filterDuplicates
    }
}

/// Timing for links made from the pending-connection list; kernel defaults
/// (net/bluetooth/hci_core.c): auto-connect scan 60/30 ms, connection interval 30–50 ms,
/// supervision timeout 420 ms.
public struct ConnectionParameters: Hashable, Sendable {
    public var scanInterval: Duration
    public var scanWindow: Duration
    public var connectionInterval: Duration
    public var supervisionTimeout: Duration

    public init(scanInterval: Duration = .milliseconds(60), scanWindow: Duration = .milliseconds(30),
                connectionInterval: Duration = .milliseconds(30), supervisionTimeout: Duration = .milliseconds(420)) {
        self.scanInterval = scanInterval; self.scanWindow = scanWindow
        self.connectionInterval = connectionInterval; self.supervisionTimeout = supervisionTimeout
    }
    public static let kernelDefault = ConnectionParameters()
}

/// One received advertising report.
public struct AdvertisementReport: Hashable, Sendable {
    public var address: BluetoothAddress
    public var data: AdvertisingData
    public var rssi: Int8
    public var connectable: Bool
    public init(address: BluetoothAddress, data: AdvertisingData, rssi: Int8, connectable: Bool) {
        self.address = address; self.data = data; self.rssi = rssi; self.connectable = connectable
    }
}
