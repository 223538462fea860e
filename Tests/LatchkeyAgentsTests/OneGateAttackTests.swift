@testable import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// The one gate at the agent level (docs/SECURITY.md, "One gate"): a revoked key loses what
/// it holds live within a second, its phone stops asking, and a holder who keeps trying
/// cannot fill the audit log; one key's radios cannot take the owner's link slot; a pairing
/// that enrolled nothing leaves no untimed link; a guest reads only its own events.
struct OneGateAttackTests {
    static let guest = PhoneKey(id: 2, name: "guest", secret: CommandSealing.newSecret(), role: .user)

    func count(_ w: AgentWorld, _ name: String) -> Int { w.lockEvents.names().filter { $0 == name }.count }

    /// A central at `address` beside the door, linked and ready.
    func radio(_ w: AgentWorld, _ address: BluetoothAddress, at position: Double = 3) -> RawCentral {
        if w.air.device(address) == nil { _ = w.air.addDevice(address: address, position: position) }
        let central = RawCentral(transport: w.air.device(address)!, lockAddress: w.lockAddress)
        central.connect()
        #expect(w.advance(until: { central.isReady }, limit: .seconds(3)), "\(address) links")
        return central
    }

    /// `key`'s sealed frame for `operation` on the challenge the central read.
    func sealed(_ key: PhoneKey, _ operation: LockOperation, counter: UInt64) -> ([UInt8]) -> [UInt8] {
        { challenge in
            (try? CommandSealing.seal(CommandBody(operation: operation, commandID: counter), keyID: key.id,
                                      secret: key.secret, counter: counter, challenge: challenge).bytes) ?? []
        }
    }

    @Test func revocationEndsTheLiveLinkWithinASecondAndThePhoneStopsAsking() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 1)
        #expect(w.command(.unlock) == nil)
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(2)))
        #expect(w.command(.lock) == nil)
        // `latchkey keys revoke 1` from another process: the store changes, nobody tells the lock.
        w.keys.keys[1]!.revoked = true
        let revokedAt = w.loop.now
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockKeyEnded.name) }, limit: .seconds(1)),
                "the lock learns of it within a second")
        let ended = try #require(w.lockEvents.events.last { $0.name == EventKind.lockKeyEnded.name })
        #expect(ended.field("key") == "1" && ended.field("links") == "1")
        #expect(ended.time - revokedAt <= .seconds(1))
        // The phone re-links once, hears "revoked key" for its `present`, and stops asking.
        #expect(w.advance(until: { w.phone.keyRevoked }, limit: .seconds(5)))
        let links = count(w, EventKind.lockCentralConnected.name)
        w.loop.advance(by: .seconds(600))
        #expect(count(w, EventKind.lockCentralConnected.name) == links, "no re-link after the phone heard it")
        #expect(!w.latchEnergised, "nothing moved")
        // The owner asks by hand (the key may be back): the phone tries once more.
        w.keys.keys[1]!.revoked = false
        #expect(w.command(.unlock) == nil)
        #expect(!w.phone.keyRevoked)
    }

    /// A member unlocks and walks off; the owner revokes the key while the phone is still
    /// linked: the lock still locks behind it (its dropped link starts the departure grace).
    @Test func aKeyRevokedWhileTheDoorIsUnlockedStillLocksBehindIt() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 1)
        #expect(w.command(.unlock) == nil)
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(2)))
        w.keys.keys[1]!.revoked = true
        #expect(w.advance(until: { !w.latchEnergised }, limit: .seconds(1) + .seconds(5) + .seconds(2)),
                "locked behind the revoked key's phone")
        #expect(w.lock.controller.lockState == .locked)
    }

    /// A key the store could not read is looked at again, not ended: a flaky card must not
    /// drop every phone's link.
    @Test func anUnreadableKeyIsNotEnded() {
        let loop = ManualEventLoop()
        var ended: [UInt32] = []
        var readable = false
        let watch = KeyWatch(loop: loop, keysInUse: { [1] }, isCurrent: { _ in readable ? false : nil }, ended: { ended.append($0) })
        watch.linkBound()
        loop.advance(by: .seconds(10))
        #expect(ended.isEmpty)
        readable = true
        loop.advance(by: KeyWatch.period)
        #expect(ended == [1])
        watch.stop()
    }

    @Test func aRevokedHolderWhoKeepsTryingIsAuditedAtABoundedRate() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        w.keys.keys[1]!.revoked = true
        // A `present` moves no bolt: the record names no lock operation.
        let revoked = LockOperationRecord(operation: nil, source: .remote, who: KeyID(1))
        let before = w.lockLog.entries.count
        // A modified phone app that ignores "revoked key": it re-links and sends `present`
        // for twenty simulated minutes; each link is dropped for proving nothing.
        var counter: UInt64 = 100
        let address = BluetoothAddress(0xBAD000000011)
        while w.loop.now < Instant(nanoseconds: 0) + .seconds(20 * 60) {
            let c = radio(w, address)
            counter += 1
            c.send(sealed(w.key, .present, counter: counter))
            #expect(w.advance(until: { c.results.count == 1 }, limit: .seconds(2)))
            #expect(c.results == [.unknownKey])
            #expect(w.advance(until: { c.lock.state != .connected }, limit: .seconds(7)), "its link is dropped")
            w.loop.advance(by: .seconds(1))
        }
        let entries = w.lockLog.entries.dropFirst(before).filter { $0.event.kind == .lockOperationError(revoked, .disabledUserDenied) }
        #expect(counter - 100 > 100, "it tried \(counter - 100) times")
        let logged = entries.count
        #expect(logged >= 1 && logged <= 3, "\(logged) audit entries for \(counter - 100) tries")
        #expect(w.lockLog.entries.count - before <= 3)
    }

    @Test func fourRadiosWithOneGuestKeyNeverTakeTheOwnersSlot() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100, maximumLinks: 4)
        // The owner is out, and the lock saw them go (an arrival needs a departure it saw).
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockDeparture.name) }, limit: .seconds(12)))
        w.keys.keys[Self.guest.id] = Self.guest
        var radios: [RawCentral] = []
        for i in 0..<4 {
            let c = radio(w, BluetoothAddress(0xBAD000000020 + UInt64(i)))
            c.send(sealed(Self.guest, .present, counter: UInt64(i + 1)))
            #expect(w.advance(until: { c.results.count == 1 }, limit: .seconds(2)))
            #expect(c.results == [nil], "the guest's present is accepted on radio \(i)")
            radios.append(c)
            w.loop.advance(by: .milliseconds(500))
        }
        // One key, one link: each newer session ended the older link.
        #expect(radios.filter { $0.lock.state == .connected }.count == 1)
        #expect(count(w, EventKind.lockLinkDropped.name) >= 3)
        // The owner comes home: a slot is free, the lock advertises, the arrival unlocks.
        let mark = w.lockEvents.events.count
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(5)),
                "the owner's phone links and unlocks: \(w.lockEvents.events.dropFirst(mark).map(\.name))")
    }

    @Test func aPairingRaceWinnerWhoseKeyWasNotEnrolledIsTimedLikeAStranger() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100, maximumLinks: 1)
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockDeparture.name) }, limit: .seconds(12)))
        var pending: PendingPairing?
        #expect(w.lock.openPairingWindow(for: .seconds(120), offer: PairingOffer(role: .user), asked: { pending = $0 }) { _ in })
        // The race's winner writes its request and then just stays linked, taking the one slot.
        let winner = radio(w, BluetoothAddress(0xBAD000000030))
        let request = try PairingInitiator(name: "mallory", expectedFingerprint: w.identity.fingerprint).request
        winner.writePairing(request.bytes)
        #expect(w.advance(until: { pending != nil }, limit: .seconds(2)))
        // While the owner decides, the link may stay (the phone reads its answer on it)...
        w.loop.advance(by: LockAgentConfiguration.defaultUnauthenticatedLinkTimeout * 2)
        #expect(winner.lock.state == .connected)
        // ...the owner sees a code that is not the one on their phone and refuses it.
        #expect(w.lock.rejectPairing() != nil)
        // The winner's link holds no key: it is dropped as a stranger's would be.
        #expect(w.advance(until: { winner.lock.state != .connected },
                          limit: LockAgentConfiguration.defaultUnauthenticatedLinkTimeout + .seconds(1)))
        #expect(w.lockEvents.events.contains { $0.name == EventKind.lockLinkDropped.name && $0.field("reason")?.hasPrefix("unauthenticated") == true })
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(5)), "the owner's phone links and unlocks")
    }

    @Test func aGuestReadsOnlyItsOwnEventsTheOwnerTheHouseholds() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 1)
        #expect(w.command(.unlock) == nil)
        #expect(w.command(.lock) == nil)
        w.keys.keys[Self.guest.id] = Self.guest
        let g = radio(w, BluetoothAddress(0xBAD000000040))
        g.send(sealed(Self.guest, .unlock, counter: 1))
        #expect(w.advance(until: { g.results.count == 1 }, limit: .seconds(2)))
        #expect(g.results == [nil])
        #expect(w.advance(until: { !w.lock.controller.machine.isMoving && w.latchEnergised }, limit: .seconds(2)))
        // The owner's phone reads the household's log: the owner's events and the guest's.
        var owner: [(sequence: UInt32, event: LockEvent)] = []
        w.phone.fetchLog(limit: 100) { if case .success(let rows) = $0 { owner = rows } }
        #expect(w.advance(until: { !owner.isEmpty }, limit: .seconds(5)))
        #expect(owner.contains { $0.event.keyID == KeyID(1) } && owner.contains { $0.event.keyID == KeyID(2) })
        // The guest's session reads only the events that name its key.
        g.subscribe()
        w.loop.advance(by: .milliseconds(500))
        g.requestLog()
        let address = "\(BluetoothAddress(0xBAD000000040))"
        #expect(w.advance(until: { w.lockEvents.events.contains { $0.name == EventKind.lockLogTransfer.name && $0.field("central") == address } },
                          limit: .seconds(3)), "\(g.logRequests) \(g.subscriptions)")
        let guestLog = try #require(w.lockEvents.events.last { $0.name == EventKind.lockLogTransfer.name && $0.field("central") == address })
        let guests = w.lockLog.entries.filter { $0.event.keyID == KeyID(2) }.count
        #expect(guests >= 1 && guests < w.lockLog.entries.count)
        #expect(guestLog.field("events") == "\(guests)", "the guest's transfer carries only its own events")
    }
}
