/// What one HCI event copied from the adapter (a raw HCI socket, LatchkeyKernel's
/// `HCIEventSource`) says about the kernel's LE connection attempts: the two events after which
/// a 6.12 kernel can leave its auto-connect scan off (LatchkeyKernel then refreshes its pending
/// connects). Pure: packets in, meaning out; everything else is nil.
///
/// Packets are as a raw HCI socket delivers them: the packet type octet (0x04, HCI event),
/// then the event code, the parameter length and the parameters (Core Vol 4 Part E 5.4.4).
package enum ConnectAttemptEvent: Equatable {
    /// An LE Connection Complete (or Enhanced, v1 or v2) with an error: the attempt ended
    /// without a link. On 6.12 the kernel cancels it afterwards (see `cancelRefused`).
    case failed(status: UInt8)
    /// The kernel's LE Create Connection Cancel was refused (6.12 after a failed complete:
    /// Command Disallowed, 0x0C). Its abort then ends in the cleanup that skips the
    /// passive-scan update for an Add Device entry.
    case cancelRefused(status: UInt8)

    /// HCI packet type of an event (Core Vol 4 Part A 2, UART transport).
    package static let eventPacket: UInt8 = 0x04
    /// Event codes (Core Vol 4 Part E 7.7).
    package static let commandComplete: UInt8 = 0x0E
    package static let commandStatus: UInt8 = 0x0F
    package static let leMeta: UInt8 = 0x3E
    /// LE Meta subevents that end an LE Create Connection: LE Connection Complete (7.7.65.1),
    /// LE Enhanced Connection Complete v1 (7.7.65.10) and v2 (7.7.65.29, Core 5.4). The
    /// status is the first parameter after the subevent code in each.
    package static let connectionCompleteSubevents: Set<UInt8> = [0x01, 0x0A, 0x29]
    /// HCI_LE_Create_Connection_Cancel (OGF 0x08, OCF 0x000E; Core Vol 4 Part E 7.8.13).
    package static let createConnectionCancel: UInt16 = 0x200E
    /// The events the raw socket's filter lets through (the kernel filters by event code,
    /// and Command Complete/Status by opcode too).
    package static let watchedEvents: [UInt8] = [commandComplete, commandStatus, leMeta]

    package init?(packet: [UInt8]) {
        guard packet.count >= 3, packet[0] == Self.eventPacket, Int(packet[2]) == packet.count - 3 else { return nil }
        let parameters = packet.dropFirst(3)
        switch packet[1] {
        case Self.leMeta:
            guard parameters.count >= 2, Self.connectionCompleteSubevents.contains(parameters.first!) else { return nil }
            let status = parameters[parameters.startIndex + 1]
            guard status != 0 else { return nil }
            self = .failed(status: status)
        case Self.commandComplete:
            // Num_HCI_Command_Packets, Command_Opcode (LE), then the return parameters: Status.
            guard parameters.count >= 4, Self.opcode(parameters, at: 1) == Self.createConnectionCancel else { return nil }
            let status = parameters[parameters.startIndex + 3]
            guard status != 0 else { return nil }
            self = .cancelRefused(status: status)
        case Self.commandStatus:
            // Status, Num_HCI_Command_Packets, Command_Opcode (LE). A controller may answer a
            // command it cannot run with a Command Status; the kernel takes it as the answer.
            guard parameters.count >= 4, Self.opcode(parameters, at: 2) == Self.createConnectionCancel else { return nil }
            let status = parameters.first!
            guard status != 0 else { return nil }
            self = .cancelRefused(status: status)
        default:
            return nil
        }
    }

    private static func opcode(_ parameters: ArraySlice<UInt8>, at offset: Int) -> UInt16 {
        let i = parameters.startIndex + offset
        return UInt16(parameters[i]) | UInt16(parameters[i + 1]) << 8
    }
}
