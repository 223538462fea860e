import LatchkeyAgents
import LatchkeyATT
import LatchkeyEvents
@testable import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeyPhone
import LatchkeySim
import LatchkeyTransport
import Testing

/// The departure credit cannot outlive the owner's return (docs/SECURITY.md, "The network
/// door"): an arrival intent is one publish away for anyone on the house's broker, so the
/// owner who came home and did not ask must not leave an unlock waiting for it. The phone
/// stays `nearby` for a bounded time only, and the lock's credit is spent by the key's bolt
/// commands and runs out after its first authenticated command since the departure.
struct ReturnedOwnerTests {
    /// The owner left (the lock saw it) and walked back without an intent: linked, verified,
    /// nothing asked.
    func backWithoutAnIntent() throws -> AgentWorld {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(6)))
        w.walkPhone(to: 2)
        #expect(w.advance(until: { w.phone.presence == .nearby }, limit: .seconds(3)))
        #expect(w.lockEvents.names().contains(EventKind.lockDepartureCreditClock.name), "the present started the lock's clock")
        return w
    }

    func unexpectedArrivals(_ w: AgentWorld) -> [LockEvent] {
        w.lockLog.entries.map(\.event).filter {
            if case .lockOperationError(let r, .arrivalNotExpected) = $0.kind { r.who == KeyID(w.key.id) } else { false }
        }
    }

    func refusals(_ w: AgentWorld) -> [String] {
        w.lockEvents.events.filter { $0.name == EventKind.lockArrivalRefused.name }.compactMap { $0.field("reason") }
    }

    @Test func aLinkFirstAndAnIntentWithinTheWindowStillUnlocks() throws {
        let w = try backWithoutAnIntent()
        w.loop.advance(by: .seconds(90))  // a geofence that fires late, inside both limits
        #expect(w.phone.arrivalIntent() == "asking the lock now")
        #expect(w.advance(until: { w.latchEnergised && w.phone.presence == .home }, limit: .seconds(3)))
        #expect(unexpectedArrivals(w).isEmpty)
    }

    @Test func anIntentHoursAfterTheOwnerCameHomeAndOpenedByHandIsRefusedAndAudited() throws {
        let w = try backWithoutAnIntent()
        // The owner taps unlock, goes in, locks.
        #expect(w.command(.unlock) == nil)
        #expect(w.lockEvents.names().contains(EventKind.lockDepartureCreditSpent.name))
        #expect(w.command(.lock) == nil)
        #expect(w.advance(until: { w.lock.controller.lockState == .locked }, limit: .seconds(2)))
        w.loop.advance(by: .seconds(3 * 3600))
        // The phone asks nothing: `nearby` aged into home.
        #expect(w.phone.presence == .home)
        #expect(w.phoneEvents.names().contains(EventKind.phoneHomeWithoutArrival.name))
        #expect(w.phone.arrivalIntent().hasPrefix("nothing to ask"))
        w.loop.advance(by: .seconds(5))
        #expect(!w.phoneEvents.names().contains(EventKind.phoneArrivalRequest.name))
        // And a phone that asks all the same (an older one, or one made to) is refused by the
        // lock on its own, which says so in the audit log.
        #expect(w.command(.arrivalUnlock) == .rejected(.refusedByPolicy))
        #expect(refusals(w) == [ArrivalPolicy.Refusal.noDepartureSeen.rawValue])
        #expect(unexpectedArrivals(w).count == 1)
        #expect(!w.latchEnergised && w.lock.controller.lockState == .locked)
    }

    @Test func theCreditRunsOutAfterTheReturnEvenIfTheOwnerTouchedNothing() throws {
        let w = try backWithoutAnIntent()
        w.loop.advance(by: w.lock.configuration.arrivalPolicy.departureCreditAfterReturn + .seconds(1))
        #expect(w.command(.arrivalUnlock) == .rejected(.refusedByPolicy))
        #expect(refusals(w) == [ArrivalPolicy.Refusal.returnedLongAgo.rawValue])
        #expect(unexpectedArrivals(w).count == 1)
        #expect(!w.latchEnergised)
    }

    @Test func anIntentHoursLaterAfterTheLockAndThePhoneRestartedIsRefusedAndAudited() throws {
        let w = try backWithoutAnIntent()
        #expect(w.command(.unlock) == nil)
        #expect(w.command(.lock) == nil)
        #expect(w.advance(until: { w.lock.controller.lockState == .locked }, limit: .seconds(2)))
        // Both restart while the phone is nearby (a power cut, an update).
        w.killPhone()
        w.killLock()
        try w.restartLock()
        try w.startPhone(grace: .seconds(5))
        #expect(w.advance(until: { w.phone.isLinked && w.phoneEvents.names().contains(EventKind.phoneLinkVerified.name) },
                          limit: .seconds(10)))
        w.loop.advance(by: .seconds(3 * 3600))
        #expect(w.phone.presence == .home, "a phone restarted while nearby cannot tell how long it was down")
        #expect(w.phone.arrivalIntent().hasPrefix("nothing to ask"))
        #expect(w.command(.arrivalUnlock) == .rejected(.refusedByPolicy))
        #expect(refusals(w) == [ArrivalPolicy.Refusal.noDepartureSeen.rawValue])
        #expect(unexpectedArrivals(w).count == 1)
        #expect(!w.latchEnergised && w.lock.controller.lockState == .locked)
    }
}

/// A device posing as the lock (its address is in every advertisement): it links, answers
/// every read and write, and notifies — but cannot seal a reply under the phone's key.
final class LookalikeLock: PeripheralManagerDelegate {
    let manager: PeripheralManager
    private var status: LocalCharacteristic?
    private(set) var writes = 0

    init(transport: any BluetoothTransport) {
        manager = PeripheralManager(transport: transport)
        manager.delegate = self
    }

    func peripheralManagerDidUpdateState(_ pm: PeripheralManager) {
        guard pm.state == .poweredOn, let service = try? pm.add(LockServiceDefinition.service) else { return }
        status = service.characteristic(LockServiceUUID.lockState)
        pm.startAdvertising(Advertisement(data: AdvertisingData(serviceUUIDs: [LockServiceUUID.service], localName: "Latchkey"),
                                          interval: .milliseconds(20)))
    }

    func peripheralManager(_ pm: PeripheralManager, didReceiveRead request: ReadRequest) -> Result<[UInt8], ATTErrorCode> {
        .success(ChallengeGrant(challenge: Array(repeating: 0x5A, count: 16), lifetimeMilliseconds: 5000).bytes)
    }

    func peripheralManager(_ pm: PeripheralManager, didReceiveWrite request: WriteRequest) -> ATTErrorCode? {
        writes += 1
        return nil  // "accepted", whatever it was
    }

    func peripheralManager(_ pm: PeripheralManager, central: Central, didSubscribeTo characteristic: LocalCharacteristic) {
        guard characteristic === status else { return }
        _ = pm.updateValue(Array(repeating: 0xA5, count: 40), for: characteristic, onSubscribedCentrals: [central])
    }

    func peripheralManager(_ pm: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: LocalCharacteristic) {}
    func peripheralManagerIsReady(toUpdateSubscribers pm: PeripheralManager) {}
    func peripheralManager(_ pm: PeripheralManager, didConnect central: Central) {}
    func peripheralManager(_ pm: PeripheralManager, didDisconnect central: Central, reason: DisconnectReason) {}
}

/// Presence a lookalike or a relay cannot fake (docs/SECURITY.md, "The network door").
struct LookalikeAndRelayPresenceTests {
    @Test func aLookalikeLockNeverMakesThePhoneNearbyOrHome() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100)
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(6)))
        // The real lock is gone from the air; a device with its address stands by the owner.
        w.killLock()
        w.air.removeDevice(w.lockAddress)
        let fake = LookalikeLock(transport: w.air.addDevice(address: w.lockAddress, position: 95))
        #expect(w.advance(until: { w.phone.isLinked && fake.writes > 0 }, limit: .seconds(5)))
        w.loop.advance(by: .seconds(30))
        #expect(w.phone.isLinked, "the lookalike holds the link")
        #expect(w.phone.presence == .away, "a link nobody proved to be the lock's is no return")
        #expect(w.phoneEvents.names().filter { $0 == EventKind.phoneLinkVerified.name }.count == 1, "the real lock's, before it went")
        #expect(w.phoneEvents.names().contains(EventKind.phoneReplyUnreadable.name))
    }

    @Test func aLookalikeDoesNotCancelTheOwnersDeparture() throws {
        // The owner walks out; a lookalike links within the phone's grace: still a departure.
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 2)
        #expect(w.advance(until: { w.phone.presence == .home }, limit: .seconds(5)))
        w.killLock()
        w.air.removeDevice(w.lockAddress)
        #expect(w.advance(until: { w.phone.presence == .leaving }, limit: .seconds(3)))
        let fake = LookalikeLock(transport: w.air.addDevice(address: w.lockAddress, position: 3))
        #expect(w.advance(until: { w.phone.isLinked && fake.writes > 0 }, limit: .seconds(5)))
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(6)))
    }

    @Test func aRelayCarryingTheOwnersLinkCancelsTheAutoLockBehindThem() throws {
        // The residual risk, shown by behaviour: `present` has no timing bound. The owner
        // unlocks from inside and walks away; within the lock's departure grace a relay next
        // to them carries their phone's link to the door, its `present` verifies, and the
        // lock cancels the departure: it does not lock behind them.
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 2, relayed: true)
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(5)))
        w.lock.controller.submit(LockCommand(.unlock, source: .button))
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(2)))
        w.relay!.latency = .milliseconds(8)
        w.walkPhone(to: 100)  // out of the relay's reach: the link drops, the lock's grace starts
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockCentralDisconnected.name) }, limit: .seconds(3)))
        w.walkPhone(to: 2)    // the relay's radio is brought next to the owner
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockDepartureCancelled.name) }, limit: .seconds(4)))
        w.loop.advance(by: .seconds(60))
        #expect(!w.lockEvents.names().contains(EventKind.lockDeparture.name))
        #expect(w.latchEnergised && w.lock.controller.lockState == .unlocked)
    }
}
