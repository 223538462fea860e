import LatchkeyATT
import LatchkeyCentral
import LatchkeyGATT
import LatchkeyManagers
import LatchkeySim
import LatchkeyTestKit
import Testing

/// The Generic Access service every peripheral manager publishes (Core Vol 3 Part C 12), over
/// the simulated radio: first in the database, with the name and appearance it was given,
/// read-only; and the central's app never sees it unless it asks for it, as under Core
/// Bluetooth.
@Suite struct GenericAccessTests {
    /// The phone's received PDUs: what the lock answered, byte for byte.
    final class Received {
        private(set) var all: [[UInt8]] = []
        func record(_ direction: String, _ pdu: [UInt8]) { if direction == "rx" { all.append(pdu) } }
        func first(_ opcode: UInt8) -> [UInt8]? { all.first { $0.first == opcode } }
    }

    private static func linked() throws -> (Home, Peripheral, Received) {
        let home = try Home()
        let received = Received()
        home.central.trace = { _, direction, pdu in received.record(direction, pdu) }
        return (home, try home.connected(lockManager: home.lock.manager), received)
    }

    @Test func primaryServiceDiscoveryListsGenericAccessFirstThenGenericAttribute() throws {
        let (home, p, received) = try Self.linked()
        p.discoverServices()
        #expect(home.loop.advance(until: { p.services != nil }, limit: .seconds(5)))
        // Read By Group Type Response: 6 octets an entry; 0x1800 at 0x0001–0x0005, then 0x1801
        // at 0x0006–0x000D. The app's service, a 128-bit UUID, comes in the next response.
        #expect(received.first(0x11) == [0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18,
                                         0x06, 0x00, 0x0D, 0x00, 0x01, 0x18])
        #expect(p.services?.map(\.uuid) == [TestGATT.service], "the manager's services are not the app's")
        #expect(p.service(TestGATT.service)?.startHandle == 0x000E)
    }

    @Test func theServiceHasDeviceNameAndAppearanceReadOnly() throws {
        let (home, p, _) = try Self.linked()
        p.discoverServices([.genericAccessService])
        #expect(home.loop.advance(until: { p.services != nil }, limit: .seconds(5)))
        let gap = try #require(p.service(.genericAccessService), "listed when asked for by UUID")
        #expect(gap.startHandle == 0x0001 && gap.endHandle == 0x0005)
        p.discoverCharacteristics(for: gap)
        #expect(home.loop.advance(until: { gap.characteristics != nil }, limit: .seconds(5)))
        let characteristics = gap.characteristics ?? []
        #expect(characteristics.map(\.uuid) == [.deviceName, .appearance])
        #expect(characteristics.map(\.valueHandle) == [0x0003, 0x0005])
        #expect(characteristics.allSatisfy { $0.properties == [.read] })
    }

    @Test func readsReturnTheGivenNameAndTheDoorLockAppearance() throws {
        let (home, p, received) = try Self.linked()
        let gap = try discoveredGenericAccess(home, p)
        for c in gap.characteristics ?? [] { p.readValue(for: c) }
        home.settle()
        #expect(home.phoneApp.values(of: .deviceName) == [Array("Latchkey".utf8)])
        #expect(home.phoneApp.values(of: .appearance) == [[0x08, 0x07]], "0x0708: Access Control, Door Lock")
        #expect(received.all.contains([0x0B] + Array("Latchkey".utf8)))
        #expect(home.lockApp.events.allSatisfy { if case .read = $0 { false } else { true } },
                "answered by the manager, never the app")
    }

    @Test(arguments: [[0x4C, 0x6F], Array(repeating: 0x41, count: 300)] as [[UInt8]])
    func writesAreRefusedWithWriteNotPermitted(value: [UInt8]) throws {
        // Two octets: a Write Request; 300: more than MTU − 3 at any MTU (247 at most on the
        // simulated bearer), a long write (Prepare Write Requests).
        let (home, p, received) = try Self.linked()
        let gap = try discoveredGenericAccess(home, p)
        for c in gap.characteristics ?? [] { p.writeValue(value, for: c, withResponse: true) }
        home.settle()
        let refusals = home.phoneApp.events.filter { if case .wrote(_, .att(.writeNotPermitted)) = $0 { true } else { false } }
        #expect(refusals.count == 2)
        #expect(received.all.contains { $0.count == 5 && $0[0] == 0x01 && $0[2...3] == [0x03, 0x00] && $0[4] == 0x03 },
                "Error Response: Write Not Permitted (0x03) at Device Name (0x0003)")
        p.readValue(for: try #require(gap.characteristics?.first))
        home.settle()
        #expect(home.phoneApp.values(of: .deviceName).last == Array("Latchkey".utf8), "the name is unchanged")
        #expect(home.lockApp.events.allSatisfy { if case .write = $0 { false } else { true } })
    }

    @Test func aNameLongerThan248OctetsIsCutBetweenCharacters() {
        // 247 ASCII octets then a 2-octet "é": it would end at 249, so it is left out whole.
        let name = String(repeating: "a", count: 247) + "é"
        let definition = GenericAccessService.definition(GenericAccess(deviceName: name))
        #expect(definition.characteristics[0].value == Array(repeating: 0x61, count: 247))
        #expect(GenericAccessService.definition(GenericAccess(deviceName: "Front Door")).characteristics[0].value
                == Array("Front Door".utf8))
    }

    private func discoveredGenericAccess(_ home: Home, _ p: Peripheral) throws -> RemoteService {
        p.discoverServices([.genericAccessService])
        guard home.loop.advance(until: { p.services != nil }, limit: .seconds(5)) else { throw NotLinked() }
        let gap = try #require(p.service(.genericAccessService))
        p.discoverCharacteristics(for: gap)
        guard home.loop.advance(until: { gap.characteristics != nil }, limit: .seconds(5)) else { throw NotLinked() }
        return gap
    }
}
