import LatchkeyTransport

/// The parameters of Add Advertising (0x003E), built from the seam's `Advertisement`.
public struct AdvertisingInstance: Hashable, Sendable {
    /// Add Advertising Flags (mgmt-api.txt, Read Advertising Features).
    public struct Flags: OptionSet, Hashable, Sendable {
        public var rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let connectable = Self(rawValue: 1 << 0)
        public static let discoverable = Self(rawValue: 1 << 1)
        public static let limitedDiscoverable = Self(rawValue: 1 << 2)
        /// The kernel writes the Flags AD structure itself.
        public static let managedFlags = Self(rawValue: 1 << 3)
        public static let txPower = Self(rawValue: 1 << 4)
    }

    /// Legacy advertising and scan response data: 31 octets (Core Vol 6 Part B 2.3.1.1).
    public static let legacyDataLength = 31
    /// The Flags AD structure the kernel prepends when it manages flags: 3 octets.
    static let flagsStructureLength = 3

    /// 1...254; 0 is reserved.
    public var instance: UInt8
    public var flags: Flags
    /// Seconds per turn when several instances rotate; 0 = kernel default (2 s).
    public var duration: UInt16
    /// Lifetime in seconds; 0 = until removed (and kept across power cycles).
    public var timeout: UInt16
    public var advertisingData: [UInt8]
    public var scanResponse: [UInt8]

    public init(instance: UInt8, flags: Flags, duration: UInt16 = 0, timeout: UInt16 = 0,
                advertisingData: [UInt8], scanResponse: [UInt8] = []) {
        self.instance = instance
        self.flags = flags
        self.duration = duration
        self.timeout = timeout
        self.advertisingData = advertisingData
        self.scanResponse = scanResponse
    }

    /// The kernel owns the Flags AD structure (it rejects advertising data that carries one
    /// while it manages flags, and sets "BR/EDR not supported" itself), so the seam's flags
    /// become Add Advertising flags and the rest of the data is encoded without them, in
    /// the 28 octets left. No timeout: the instance lives until removed.
    public init(instance: UInt8, _ advertisement: Advertisement) throws(TransportError) {
        var flags: Flags = advertisement.connectable ? [.connectable] : []
        var room = Self.legacyDataLength
        if let adFlags = advertisement.data.flags {
            // Core Supplement Part A 1.3: bit 0 LE Limited, bit 1 LE General Discoverable.
            if adFlags & 0x02 != 0 { flags.insert(.discoverable) }
            else if adFlags & 0x01 != 0 { flags.insert(.limitedDiscoverable) }
            else { flags.insert(.managedFlags) }
            room -= Self.flagsStructureLength
        }
        var data = advertisement.data
        data.flags = nil
        var response = advertisement.scanResponse
        response?.flags = nil
        let advertisingData = data.encoded(maximumLength: room)
        let scanResponse = response?.encoded() ?? []
        guard advertisingData.count <= room, scanResponse.count <= Self.legacyDataLength else {
            throw TransportError(.invalidParameters, "advertising data of \(advertisingData.count) octets (room: \(room)) "
                                 + "or scan response of \(scanResponse.count) (room: \(Self.legacyDataLength)) does not fit")
        }
        self.init(instance: instance, flags: flags, advertisingData: advertisingData, scanResponse: scanResponse)
    }

    func write(to writer: inout ByteWriter) {
        writer.u8(instance)
        writer.u32(flags.rawValue)
        writer.u16(duration)
        writer.u16(timeout)
        writer.u8(UInt8(advertisingData.count))
        writer.u8(UInt8(scanResponse.count))
        writer.bytes(advertisingData)
        writer.bytes(scanResponse)
    }
}
