import LatchkeyAgents
import LatchkeyATT
import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport
import Testing

/// Service Changed end to end: a lock relaunched as another version (its service changed)
/// tells the phone whose link survived it with Service Changed; a phone that was dead
/// through it finds out from the Database Hash; either way the phone binds to the new
/// handles before it writes anything, and the next sealed command opens the door. A lock
/// relaunched unchanged says nothing, and the phone keeps its cache.
struct ServiceChangedAgentTests {
    /// The next version of the lock service: a read-only Firmware Revision String (0x2A26)
    /// in front, so every handle of the lock's characteristics moves by two.
    static var nextVersion: GATTService {
        var d = LockServiceDefinition.service
        d.characteristics.insert(GATTCharacteristic(uuid: BluetoothUUID(0x2A26), properties: [.read], permissions: .read,
                                                    value: Array("2.0".utf8)), at: 0)
        return d
    }

    /// A world whose phone is linked and ready next to the lock, its PDUs counted from now.
    private func readyWorld() throws -> (AgentWorld, SentPDUs) {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 1)
        #expect(w.advance(until: { w.phoneEvents.names().contains(EventKind.phoneGattReady.name) }, limit: .seconds(5)))
        w.loop.advance(by: .milliseconds(500))  // the arrival's `present` is answered
        #expect(w.linkSetUp(), "and the link's Service Changed chores, which follow it")
        let sent = SentPDUs()
        w.phone.central.trace = { _, direction, pdu in sent.record(direction, pdu) }
        return (w, sent)
    }

    /// SIGKILL of the lock agent and its relaunch as the version with `definition`; the
    /// relaunched lock's PDUs are counted.
    private func relaunchLock(_ w: AgentWorld, as definition: GATTService) throws -> SentPDUs {
        w.killLock()
        try w.restartLock(serviceDefinition: definition)
        let sent = SentPDUs()
        w.lock.peripheral.trace = { _, direction, pdu in sent.record(direction, pdu) }
        w.loop.run()
        return sent
    }

    private func readyCount(_ w: AgentWorld) -> Int { w.phoneEvents.names().filter { $0 == EventKind.phoneGattReady.name }.count }

    /// The phone learnt of the change and is ready again on the new handles.
    private func readyAfterTheChange(_ w: AgentWorld) -> Bool {
        let names = w.phoneEvents.names()
        guard let changed = names.firstIndex(of: EventKind.phoneServicesChanged.name),
              let ready = names.lastIndex(of: EventKind.phoneGattReady.name) else { return false }
        return ready > changed
    }

    @Test func aLockRelaunchedUnchangedSaysNothingAndThePhoneKeepsItsCache() throws {
        let (w, phoneSent) = try readyWorld()
        let lockSent = try relaunchLock(w, as: LockServiceDefinition.service)
        w.loop.advance(by: .seconds(1))
        #expect(lockSent.count(0x1D) == 0, "no Service Changed")
        #expect(!w.lockEvents.names().contains(EventKind.lockServiceChanged.name))
        #expect(!w.phoneEvents.names().contains(EventKind.phoneServicesChanged.name))
        guard w.command(.unlock) == nil else { Issue.record("unlock after the lock's relaunch"); return }
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(1)))
        #expect(phoneSent.discovery == 0, "the phone's cached handles are still the lock's")
    }

    @Test func aLockRelaunchedChangedTellsThePhoneWhichBindsAgainAndTheNextCommandOpens() throws {
        let (w, phoneSent) = try readyWorld()
        let lockSent = try relaunchLock(w, as: Self.nextVersion)
        let changed = try #require(w.lockEvents.events.last { $0.name == EventKind.lockServiceChanged.name })
        #expect(changed.field("indicated") == "1", "the phone's link survived, with its Service Changed CCCD")
        #expect(lockSent.all.first?.first == 0x1D, "the indication is the first thing the relaunched lock sends")
        #expect(w.advance(until: { readyAfterTheChange(w) }, limit: .seconds(3)), "\(w.phoneEvents.names())")
        let names = w.phoneEvents.names()
        #expect(readyCount(w) == 2, "ready once before the lock's relaunch, once after it")
        #expect(!names.contains(EventKind.phoneLinkLost.name), "the link outlived the lock agent")
        #expect(!names.contains(EventKind.phoneGattFailed.name))
        #expect(phoneSent.count(0x1E) == 1, "the indication was confirmed")
        #expect(phoneSent.discovery > 0, "the lock service was discovered again")

        if let refused = w.command(.unlock) {
            Issue.record("unlock after the change: \(refused) \(w.phoneEvents.names())"); return
        }
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(1)))
        #expect(!w.lockEvents.names().contains(EventKind.lockCommandRejected.name), "nothing was written to an old handle")
    }

    @Test func aPhoneDeadThroughTheChangeFindsItByTheDatabaseHash() throws {
        let (w, _) = try readyWorld()
        w.killPhone()
        let lockSent = try relaunchLock(w, as: Self.nextVersion)
        w.loop.advance(by: .milliseconds(500))
        #expect(lockSent.count(0x1D) == 1, "sent into a link nobody read")
        try w.startPhone(grace: .seconds(5))
        let sent = SentPDUs()
        w.phone.central.trace = { _, direction, pdu in sent.record(direction, pdu) }
        #expect(w.advance(until: { readyAfterTheChange(w) }, limit: .seconds(3)), "\(w.phoneEvents.names())")
        let names = w.phoneEvents.names()
        #expect(names.contains(EventKind.phoneLinkAdopted.name))
        #expect(sent.databaseHashReads >= 1 && sent.count(0x1E) == 0, "the hash told it, not an indication")
        guard w.command(.unlock) == nil else { Issue.record("unlock after the phone's relaunch"); return }
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(1)))
    }

    /// A returning phone asks for the hash and the challenge in one Read Multiple; when the
    /// lock changed while it was away, the hash does not match and what came with it (read
    /// from a handle that is no longer the challenge) is dropped unseen: nothing is sealed
    /// before the phone has bound to the new handles.
    @Test func aReturningPhoneWhoseCacheIsStaleDropsWhatCameWithTheHashAndBindsAgain() throws {
        let (w, _) = try readyWorld()
        w.walkPhone(to: 100)
        #expect(w.advance(until: { !w.phone.isLinked }, limit: .seconds(3)))
        _ = try relaunchLock(w, as: Self.nextVersion)
        let sent = SentPDUs()
        w.phone.central.trace = { _, direction, pdu in sent.record(direction, pdu) }
        let before = w.phoneEvents.events.count
        w.walkPhone(to: 1)
        #expect(w.advance(until: { readyAfterTheChange(w) }, limit: .seconds(3)), "\(w.phoneEvents.names())")
        #expect(w.advance(until: { w.lockEvents.names().filter { $0 == EventKind.lockPhonePresent.name }.count == 2 },
                          limit: .seconds(3)), "the `present` sealed on the new handles opens")
        #expect(sent.count(0x0E) == 1, "the hash and the challenge asked for together")
        #expect(sent.databaseHashReads == 1, "a hash that does not match: read again by its UUID")
        let later = Array(w.phoneEvents.names()[before...])
        let changed = try #require(later.firstIndex(of: EventKind.phoneServicesChanged.name))
        let sealed = try #require(later.firstIndex(of: EventKind.phoneCommandSent.name))
        #expect(sealed > changed, "nothing sealed with what came from the old handle: \(later)")
        #expect(!later.contains(EventKind.phoneReplyUnreadable.name))
    }

    @Test func aMalformedServiceChangedIsLoggedAndTheLockStillOpens() throws {
        let (w, sent) = try readyWorld()
        // Sent on the lock's link behind its manager's back: no lock sends it.
        let link = try #require(w.air.device(w.lockAddress)?.connectedLinks.first)
        _ = link.send([0x1D, 0x08, 0x00, 0xFF])  // at Service Changed (0x0008)
        w.loop.advance(by: .milliseconds(300))
        let logged = try #require(w.phoneEvents.events.last { $0.name == EventKind.phoneServiceChangedInvalid.name })
        #expect(logged.field("value") == "ff")
        #expect(sent.all == [[0x1E]], "confirmed and otherwise ignored")
        #expect(!w.phoneEvents.names().contains(EventKind.phoneServicesChanged.name))
        guard w.command(.unlock) == nil else { Issue.record("unlock after a malformed indication"); return }
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(1)))
        #expect(sent.discovery == 0)
    }
}
