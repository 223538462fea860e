/// Every ATT PDU one side sends, as a manager's `trace` hook reports it: what "did it
/// discover again?" is checked against.
public final class SentPDUs {
    public private(set) var all: [[UInt8]] = []

    public init() {}

    /// A manager's `trace` callback: keeps the PDUs sent ("tx").
    public func record(_ direction: String, _ pdu: [UInt8]) {
        if direction == "tx" { all.append(pdu) }
    }

    /// Discovery requests (Vol 3 Part G 4.4–4.7): Read By Group Type, Find By Type Value,
    /// Read By Type, Find Information.
    public static let discoveryOpcodes: Set<UInt8> = [0x10, 0x06, 0x08, 0x04]
    /// Primary service discovery only (Read By Group Type, Find By Type Value).
    public static let serviceDiscoveryOpcodes: Set<UInt8> = [0x10, 0x06]

    /// Discovery requests sent, not counting `GATTClient.synchronize`'s barrier (a Find
    /// Information Request with a reversed range, which discovers nothing) nor reads of the
    /// Database Hash (a Read By Type Request too, but a read: 4.8.2).
    public var discovery: Int { all.count { Self.isDiscovery($0, among: Self.discoveryOpcodes) } }
    public var serviceDiscovery: Int { all.count { Self.isDiscovery($0, among: Self.serviceDiscoveryOpcodes) } }
    /// Barriers sent (`GATTClient.synchronize`).
    public var barriers: Int { all.count { $0.first == 0x04 && !Self.isDiscovery($0, among: [0x04]) } }
    /// Reads of the Database Hash by its UUID (0x2B2A), which a central sends on each link.
    public var databaseHashReads: Int { all.count(where: Self.isDatabaseHashRead) }
    /// Characteristic discovery: Read By Type Requests for declarations (0x2803).
    public var characteristicDiscovery: Int { all.count { $0.count == 7 && $0[0] == 0x08 && $0[5] == 0x03 && $0[6] == 0x28 } }

    private static func isDatabaseHashRead(_ pdu: [UInt8]) -> Bool {
        pdu.count == 7 && pdu[0] == 0x08 && pdu[5] == 0x2A && pdu[6] == 0x2B
    }

    private static func isDiscovery(_ pdu: [UInt8], among opcodes: Set<UInt8>) -> Bool {
        guard let op = pdu.first, opcodes.contains(op), !isDatabaseHashRead(pdu) else { return false }
        guard pdu.count >= 5 else { return true }
        // Every discovery request starts with a handle range, little-endian.
        let start = UInt16(pdu[1]) | UInt16(pdu[2]) << 8, end = UInt16(pdu[3]) | UInt16(pdu[4]) << 8
        return start <= end
    }
    public func count(_ opcode: UInt8) -> Int { all.count { $0.first == opcode } }
    public func reset() { all.removeAll() }
}
