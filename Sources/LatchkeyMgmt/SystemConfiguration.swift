import LatchkeyTransport

/// One TLV of Set Default System Configuration (0x004C): Parameter_Type (u16),
/// Value_Length (u8), Value. Every type we set is a u16 in controller units.
public struct SystemParameter: Hashable, Sendable, CustomStringConvertible {
    public struct Kind: RawRepresentable, Hashable, Sendable {
        public var rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        // Parameter_Type values of Read Default System Configuration (mgmt-api.txt).
        public static let advertisingMinInterval = Self(rawValue: 0x000A)
        public static let advertisingMaxInterval = Self(rawValue: 0x000B)
        /// The passive background scan that serves Add Device auto-connect.
        public static let autoConnectScanInterval = Self(rawValue: 0x000D)
        public static let autoConnectScanWindow = Self(rawValue: 0x000E)
        /// The active scan of Start Discovery.
        public static let discoveryScanInterval = Self(rawValue: 0x0011)
        public static let discoveryScanWindow = Self(rawValue: 0x0012)
        public static let minConnectionInterval = Self(rawValue: 0x0017)
        public static let maxConnectionInterval = Self(rawValue: 0x0018)
        public static let connectionLatency = Self(rawValue: 0x0019)
        public static let supervisionTimeout = Self(rawValue: 0x001A)
    }

    public var kind: Kind
    public var value: UInt16

    public init(_ kind: Kind, _ value: UInt16) {
        self.kind = kind
        self.value = value
    }

    public var description: String { "\(hex16(kind.rawValue))=\(value)" }

    func write(to writer: inout ByteWriter) {
        writer.u16(kind.rawValue)
        writer.u8(2)
        writer.u16(value)
    }
}

/// Seam timing → controller units, with the ranges the Core spec allows (the kernel
/// refuses the whole command, changing nothing, when one value is out of range).
public enum SystemConfiguration {
    /// Scan interval and window unit (Core Vol 4 Part E 7.8.10): 0.625 ms.
    static let scanUnit = Duration.microseconds(625)
    /// Advertising interval unit (Core Vol 4 Part E 7.8.5): 0.625 ms.
    static let advertisingUnit = Duration.microseconds(625)
    /// Connection interval unit (Core Vol 4 Part E 7.8.12): 1.25 ms.
    static let connectionIntervalUnit = Duration.microseconds(1250)
    /// Supervision timeout unit (Core Vol 4 Part E 7.8.12): 10 ms.
    static let supervisionUnit = Duration.milliseconds(10)

    /// Advertising interval min = max = `interval`; 0x0020–0x4000 (20 ms–10.24 s, Vol 4 Part E 7.8.5).
    public static func advertising(interval: Duration) throws(TransportError) -> [SystemParameter] {
        let units = try count(interval, of: advertisingUnit, in: 0x0020...0x4000, "advertising interval")
        return [SystemParameter(.advertisingMinInterval, units), SystemParameter(.advertisingMaxInterval, units)]
    }

    /// What a peripheral sets before it advertises: the advertising interval, and the widest
    /// connection interval range the Core spec allows (7.5 ms–4 s) as the range it accepts, so
    /// Linux never sends an L2CAP Connection Parameter Update Request by itself: a 6.12 central
    /// answering one while its ATT socket connects can deadlock (docs/LINUX-BLE.md, "What the HIL
    /// suite found"). The central owns the interval: our phone asks for 7.5 ms.
    public static func peripheral(advertisingInterval: Duration) throws(TransportError) -> [SystemParameter] {
        try advertising(interval: advertisingInterval) + [
            SystemParameter(.minConnectionInterval, 0x0006), SystemParameter(.maxConnectionInterval, 0x0C80),
        ]
    }

    /// The discovery scan of Start Discovery.
    public static func discovery(_ scan: ScanParameters) throws(TransportError) -> [SystemParameter] {
        let (interval, window) = try scanTiming(interval: scan.interval, window: scan.window)
        return [SystemParameter(.discoveryScanInterval, interval), SystemParameter(.discoveryScanWindow, window)]
    }

    /// The auto-connect scan and the parameters of the links it makes. Latency is 0: a
    /// lock answers every connection event. Min = max connection interval: the seam names one.
    public static func connection(_ p: ConnectionParameters) throws(TransportError) -> [SystemParameter] {
        let (scanInterval, scanWindow) = try scanTiming(interval: p.scanInterval, window: p.scanWindow)
        // Vol 4 Part E 7.8.12: interval 0x0006–0x0C80 (7.5 ms–4 s), timeout 0x000A–0x0C80 (100 ms–32 s).
        let interval = try count(p.connectionInterval, of: connectionIntervalUnit, in: 0x0006...0x0C80, "connection interval")
        let timeout = try count(p.supervisionTimeout, of: supervisionUnit, in: 0x000A...0x0C80, "supervision timeout")
        // Vol 6 Part B 4.5.2: the timeout exceeds (1 + latency) × interval × 2.
        guard p.supervisionTimeout > p.connectionInterval * 2 else {
            throw TransportError(.invalidParameters, "supervision timeout \(p.supervisionTimeout) must exceed "
                                 + "twice the connection interval \(p.connectionInterval)")
        }
        return [
            SystemParameter(.autoConnectScanInterval, scanInterval), SystemParameter(.autoConnectScanWindow, scanWindow),
            SystemParameter(.minConnectionInterval, interval), SystemParameter(.maxConnectionInterval, interval),
            SystemParameter(.connectionLatency, 0), SystemParameter(.supervisionTimeout, timeout),
        ]
    }

    /// Scan interval and window 0x0004–0x4000 (2.5 ms–10.24 s), window ≤ interval (Vol 4 Part E 7.8.10).
    static func scanTiming(interval: Duration, window: Duration) throws(TransportError) -> (UInt16, UInt16) {
        let i = try count(interval, of: scanUnit, in: 0x0004...0x4000, "scan interval")
        let w = try count(window, of: scanUnit, in: 0x0004...0x4000, "scan window")
        guard w <= i else { throw TransportError(.invalidParameters, "scan window \(window) exceeds interval \(interval)") }
        return (i, w)
    }

    /// `duration` in whole `unit`s (rounded to the nearest), checked against `range`.
    static func count(_ duration: Duration, of unit: Duration, in range: ClosedRange<UInt16>, _ what: String)
        throws(TransportError) -> UInt16
    {
        let units = (duration.nanoseconds + unit.nanoseconds / 2) / unit.nanoseconds
        guard units >= Int64(range.lowerBound), units <= Int64(range.upperBound) else {
            throw TransportError(.invalidParameters, "\(what) \(duration) outside "
                                 + "\(Double(range.lowerBound) * unit.milliseconds) ms–\(Double(range.upperBound) * unit.milliseconds) ms")
        }
        return UInt16(units)
    }
}
