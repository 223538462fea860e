import LatchkeyMgmt
import LatchkeyTransport
import Testing

/// The connection interval of a link, from the HCI events a raw HCI watch copies.
struct ConnectionTimingEventTests {
    static func packet(_ parameters: [UInt8]) -> [UInt8] { [0x04, 0x3E, UInt8(parameters.count)] + parameters }
    static let peer: [UInt8] = [0x02, 0x00, 0x00, 0xEE, 0xFF, 0xC0]  // C0:FF:EE:00:00:02, little-endian

    @Test func anLEConnectionCompleteGivesTheHandlePeerAndInterval() {
        // subevent, status, handle 0x0040, role, peer type public, peer, interval 24 (30 ms), latency, timeout, MCA
        let p = Self.packet([0x01, 0x00, 0x40, 0x00, 0x01, 0x00] + Self.peer + [0x18, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00])
        #expect(ConnectionTimingEvent(packet: p)
                == .connected(handle: 0x40, peer: BluetoothAddress(0xC0FFEE000002), interval: .milliseconds(30)))
    }

    @Test func theEnhancedCompletesCarryTheIntervalAfterTheResolvableAddresses() {
        let v1 = [0x0A, 0x00, 0x41, 0x00, 0x01, 0x01] + Self.peer + Array(repeating: 0, count: 12)
            + [0x28, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00]  // interval 40 (50 ms)
        #expect(ConnectionTimingEvent(packet: Self.packet(v1))
                == .connected(handle: 0x41, peer: BluetoothAddress(0xC0FFEE000002, kind: .random),
                              interval: .milliseconds(50)))
        let v2 = [0x29] + v1.dropFirst() + [0xFF, 0xFF, 0xFF]  // advertising handle, sync handle
        #expect(ConnectionTimingEvent(packet: Self.packet(Array(v2)))
                == .connected(handle: 0x41, peer: BluetoothAddress(0xC0FFEE000002, kind: .random),
                              interval: .milliseconds(50)))
    }

    @Test func anUpdateChangesTheIntervalOfAHandle() {
        // subevent, status, handle 0x0040 (with flag bits above the 12), interval 80 (100 ms), latency, timeout
        let p = Self.packet([0x03, 0x00, 0x40, 0x30, 0x50, 0x00, 0x00, 0x00, 0x2A, 0x00])
        #expect(ConnectionTimingEvent(packet: p) == .updated(handle: 0x40, interval: .milliseconds(100)))
    }

    @Test func failuresTruncationsOtherEventsAndImpossibleIntervalsAreNothing() {
        let good: [UInt8] = [0x03, 0x00, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x2A, 0x00]
        var failed = good; failed[1] = 0x3E
        var zero = good; zero[4] = 0; zero[5] = 0
        #expect(ConnectionTimingEvent(packet: Self.packet(failed)) == nil, "a failed update changes nothing")
        #expect(ConnectionTimingEvent(packet: Self.packet(zero)) == nil, "below 7.5 ms: not a real interval")
        #expect(ConnectionTimingEvent(packet: Self.packet(Array(good.dropLast()))) == nil)
        #expect(ConnectionTimingEvent(packet: [0x04, 0x3E, 0x0A] + good.dropLast()) == nil, "length byte lies")
        #expect(ConnectionTimingEvent(packet: Self.packet([0x02] + good.dropFirst())) == nil, "an advertising report")
        #expect(ConnectionTimingEvent(packet: [0x04, 0x0E, 0x04, 0x01, 0x0E, 0x20, 0x00]) == nil, "a command complete")
        #expect(ConnectionTimingEvent(packet: Self.packet([0x01, 0x00, 0x40])) == nil)
    }
}
