import LatchkeyTransport

/// What one HCI event copied from the adapter (a raw HCI socket) says about a link's
/// connection interval: the LE Connection Complete family, which names the peer and the
/// handle, and LE Connection Update Complete, which changes the interval of a handle. The
/// lock's arrival rule needs the interval of the link a command came on (docs/SECURITY.md,
/// "Arrival unlock"). Pure: packets in, meaning out; a failed event and everything else is nil.
///
/// The lock reads them on its own raw HCI watch (LatchkeyKernel's connection-timing watch).
package enum ConnectionTimingEvent: Equatable {
    /// A link came up: its handle, the peer, and the interval the central chose.
    case connected(handle: UInt16, peer: BluetoothAddress, interval: Duration)
    /// The link's parameters changed (either side may ask; the central decides).
    case updated(handle: UInt16, interval: Duration)

    /// LE Meta subevents (Core Vol 4 Part E 7.7.65): Connection Complete (.1), Connection
    /// Update Complete (.3), Enhanced Connection Complete v1 (.10) and v2 (.29).
    package static let connectionComplete: UInt8 = 0x01
    package static let connectionUpdateComplete: UInt8 = 0x03
    package static let enhancedConnectionCompleteV1: UInt8 = 0x0A
    package static let enhancedConnectionCompleteV2: UInt8 = 0x29
    /// Connection_Interval is in units of 1.25 ms (7.5 ms – 4 s).
    package static let intervalUnit = Duration.microseconds(1250)
    /// What the watch's socket filter lets through.
    package static let subevents: Set<UInt8> = [connectionComplete, connectionUpdateComplete, enhancedConnectionCompleteV1,
                                        enhancedConnectionCompleteV2]

    package init?(packet: [UInt8]) {
        guard packet.count >= 5, packet[0] == ConnectAttemptEvent.eventPacket, packet[1] == ConnectAttemptEvent.leMeta,
              Int(packet[2]) == packet.count - 3 else { return nil }
        let p = Array(packet.dropFirst(3))  // subevent code first
        // The offset of Connection_Interval after the subevent code, and the minimum length.
        let intervalOffset: Int
        switch p[0] {
        case Self.connectionComplete: intervalOffset = 12
        case Self.enhancedConnectionCompleteV1, Self.enhancedConnectionCompleteV2: intervalOffset = 24
        case Self.connectionUpdateComplete: intervalOffset = 4
        default: return nil
        }
        let minimum = p[0] == Self.enhancedConnectionCompleteV2 ? 34 : intervalOffset + 7
        guard p.count >= (p[0] == Self.connectionUpdateComplete ? 10 : minimum), p[1] == 0 else { return nil }
        let handle = Self.u16(p, 2) & 0x0FFF
        let units = Self.u16(p, intervalOffset)
        guard (6...3200).contains(units) else { return nil }  // outside the spec's range: not trusted
        let interval = Self.intervalUnit * Int(units)
        if p[0] == Self.connectionUpdateComplete {
            self = .updated(handle: handle, interval: interval)
        } else {
            // Role (4), Peer_Address_Type (5), Peer_Address (6...11, little-endian).
            var value: UInt64 = 0
            for i in (6...11).reversed() { value = value << 8 | UInt64(p[i]) }
            let kind: BluetoothAddress.Kind = p[5] & 0x01 == 0 ? .public : .random
            self = .connected(handle: handle, peer: BluetoothAddress(value, kind: kind), interval: interval)
        }
    }

    private static func u16(_ p: [UInt8], _ i: Int) -> UInt16 { UInt16(p[i]) | UInt16(p[i + 1]) << 8 }
}
