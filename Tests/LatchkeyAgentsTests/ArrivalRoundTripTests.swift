import LatchkeyAgents
import LatchkeyATT
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport
import Testing

/// What stands between the phone coming into range and its sealed arrival command, counted
/// in requests (each one ATT round trip, about two connection intervals): the agent's own
/// setup, and of the manager's per-link work only the Database Hash read. Service Changed's
/// chores go after the command (Peripheral+LinkSetup.swift), and so does the status
/// subscription, which needs the session the command opens (docs/SECURITY.md, "Sessions").
struct ArrivalRoundTripTests {
    /// The phone's requests on the arrival's link before its sealed command, and the ones after it.
    private func arrival(_ w: AgentWorld, _ sent: SentPDUs) throws -> (before: [ATTPDU], after: [ATTPDU]) {
        sent.reset()
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
        return try aroundTheFirstCommand(w, sent)
    }

    /// The phone's requests before its first sealed command, and the ones after it.
    private func aroundTheFirstCommand(_ w: AgentWorld, _ sent: SentPDUs) throws -> (before: [ATTPDU], after: [ATTPDU]) {
        #expect(w.linkSetUp())
        let lock = w.phone.central.retrievePeripherals(withIdentifiers: [w.lockAddress])[0]
        let control = try #require(lock.service(LockServiceUUID.service)?.characteristic(LockServiceUUID.lockControl))
        let requests = sent.all.compactMap { try? ATTPDU(decoding: $0[...]) }.filter { $0.opcode.isRequest }
        let command = try #require(requests.firstIndex {
            if case .writeRequest(control.valueHandle, _) = $0 { true } else { false }
        })
        return (Array(requests[..<command]), Array(requests[(command + 1)...]))
    }

    private static let hashRead = ATTPDU.readByTypeRequest(start: 0x0001, end: 0xFFFF, type: .databaseHash)
    /// The Generic Attribute service the lock publishes behind Generic Access (0x0001–0x0005).
    private static let genericAttribute: ClosedRange<UInt16> = 0x0006...0x000D
    /// Anything aimed at it.
    private static func isChore(_ pdu: ATTPDU) -> Bool {
        switch pdu {
        case .findByTypeValueRequest(_, _, _, let value): Array(value) == [0x01, 0x18]
        case .readByTypeRequest(let start, _, .characteristic): genericAttribute.contains(start)
        case .writeRequest(let handle, _): genericAttribute.contains(handle)
        default: false
        }
    }

    @Test func theArrivalCommandWaitsOnlyForTheHashReadBeyondTheAgentsOwnSetup() throws {
        // The owner starts at home: the first link's command is the phone's `present`.
        let w = try AgentWorld(autoRelock: .seconds(3), grace: .seconds(5), phoneStartsAt: 2)
        let sent = SentPDUs()
        w.phone.central.trace = { _, direction, pdu in sent.record(direction, pdu) }

        // The first link: MTU, hash; the lock service found (2), its characteristics (2), a
        // challenge read — then the command. The state's CCCD comes after it: the
        // subscription needs the session the command opens.
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(3)))
        let first = try aroundTheFirstCommand(w, sent)
        #expect(first.before.count == 7, "\(first.before)")
        #expect(first.before.dropFirst().first == Self.hashRead)
        #expect(!first.before.contains(where: Self.isChore), "no Service Changed chore before the command")
        #expect(first.after.filter(Self.isChore).count == 4, "found (2) and enabled (2) after it: \(first.after)")

        w.walkPhone(to: 100)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(12)))

        // A returning link: MTU, then the hash and the challenge in one Read Multiple — then
        // the command.
        let back = try arrival(w, sent)
        let lock = w.phone.central.retrievePeripherals(withIdentifiers: [w.lockAddress])[0]
        let challenge = try #require(lock.service(LockServiceUUID.service)?.characteristic(LockServiceUUID.challenge))
        let hashHandle = try #require(w.lock.peripheral.database.attributes.first { $0.type == .databaseHash }?.handle)
        #expect(back.before.count == 2, "\(back.before)")
        #expect(back.before.last == .readMultipleRequest(handles: HandleList([hashHandle, challenge.valueHandle])))
        #expect(!back.before.contains(where: Self.isChore))
        // Client Supported Features (0x000B), then Service Changed's CCCD (0x0009).
        #expect(back.after.filter(Self.isChore) == [.writeRequest(handle: 0x000B, value: [0x01]),
                                                   .writeRequest(handle: 0x0009, value: [0x02, 0x00])])
    }

    /// The same order in connection events, at the interval the phone asks for (7.5 ms): the
    /// link's first event, two of link-layer setup, MTU (2), hash + challenge (2), and the
    /// sealed write reaches the lock at the seventh — 52.5 ms after the link came up.
    @Test func aReturningPhonesCommandReachesTheLockSevenConnectionEventsAfterTheLink() throws {
        let w = try AgentWorld(autoRelock: .seconds(3), grace: .seconds(5), phoneStartsAt: 2)
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(3)))
        #expect(w.phone.central.connectionInterval == .microseconds(7_500))
        w.walkPhone(to: 100)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(12)))
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
        let linked = try #require(w.phoneEvents.events.last { $0.name == EventKind.phoneLinked.name }?.time)
        let accepted = try #require(w.lockEvents.events.last {
            $0.name == EventKind.lockCommandAccepted.name && $0.field("op") == "arrival-unlock"
        }?.time)
        #expect(accepted - linked == .microseconds(7_500) * 7, "link → command at the lock: \(accepted - linked)")
    }
}
