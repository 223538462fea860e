#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMgmt
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// `ConnectAttemptEvent.socketFilter` run by the kernel itself: attached (SO_ATTACH_FILTER) to
/// the receiving end of a socketpair, whose far end plays the controller's event copies as a
/// raw HCI socket queues them. The kernel runs a socket's filter the same way for both.
@Suite struct ConnectAttemptSocketFilterTests {
    /// What reaches the filtered end of the pair when `packet` is sent.
    private func delivered(_ packet: [UInt8]) throws -> Bool {
        let (reader, peer) = try Syscalls.seqPacketPair()
        defer { Glibc.close(reader); Glibc.close(peer) }
        try Syscalls.attachSocketFilter(reader, ConnectAttemptEvent.socketFilter)
        let sent = packet.withUnsafeBytes { Glibc.send(peer, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        #expect(sent == packet.count)   // a filter drops silently: the sender never knows
        var buffer = [UInt8](repeating: 0, count: 300)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(reader, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n > 0 { #expect(Array(buffer.prefix(n)) == packet) }   // passed whole, not trimmed
        return n > 0
    }

    @Test func connectionCompletesPassInEveryForm() throws {
        for subevent in ConnectAttemptEvent.connectionCompleteSubevents.sorted() {
            #expect(try delivered(FakeHCIEvents.connectionComplete(status: 0x3E, subevent: subevent)), "subevent \(subevent)")
            // A successful one passes too (the filter is by subevent; ConnectAttemptEvent reads the status).
            #expect(try delivered(FakeHCIEvents.connectionComplete(status: 0x00, subevent: subevent)), "subevent \(subevent)")
        }
    }

    @Test func cancelAnswersPass() throws {
        #expect(try delivered(FakeHCIEvents.cancelComplete(status: 0x0C)))
        #expect(try delivered([0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0E, 0x20]))   // Command Status, refused
    }

    /// The point of the filter: a neighbour's advertisements never wake the phone.
    @Test func advertisingReportsAreDropped() throws {
        #expect(try !delivered(FakeHCIEvents.advertisingReport))
        // LE Extended Advertising Report (0x0D), LE Directed Advertising Report (0x0B).
        #expect(try !delivered([0x04, 0x3E, 0x03, 0x0D, 0x01, 0x13]))
        #expect(try !delivered([0x04, 0x3E, 0x03, 0x0B, 0x01, 0x01]))
        // Other LE Meta subevents: Connection Update Complete (0x03), Data Length Change (0x07).
        #expect(try !delivered([0x04, 0x3E, 0x02, 0x03, 0x00]))
        #expect(try !delivered([0x04, 0x3E, 0x02, 0x07, 0x00]))
    }

    /// Every packet `ConnectAttemptEvent` reads as a failure gets through.
    @Test func everyFailureTheWatchReadsPasses() throws {
        let failures = ConnectAttemptEvent.connectionCompleteSubevents.map { FakeHCIEvents.connectionComplete(status: 0x3E, subevent: $0) }
            + [FakeHCIEvents.cancelComplete(status: 0x0C)]
        for packet in failures {
            #expect(ConnectAttemptEvent(packet: packet) != nil)
            #expect(try delivered(packet))
        }
    }
}
