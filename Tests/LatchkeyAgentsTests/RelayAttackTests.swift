import LatchkeyAgents
import LatchkeyEvents
@testable import LatchkeyLock
import LatchkeyPhone
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport
import Testing

/// The relay attack on an arrival unlock (docs/SECURITY.md, "Arrival unlock"): the owner's
/// phone is far from the door, next to one radio of a relay; the other radio is at the door.
/// The relay carries every PDU with a chosen latency and picks the door link's connection
/// interval. Each test first lets the lock see the owner leave (the relay carrying honestly,
/// as if the phone were beside the lock), then tries the attack.
struct RelayAttackTests {
    /// A relayed world whose owner has left: the lock saw the departure, the phone is away.
    func leftHome() throws -> AgentWorld {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100, relayed: true)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(8)))
        return w
    }

    func timings(_ w: AgentWorld) -> [Double] {
        w.lockEvents.events.filter { $0.name == EventKind.lockArrivalTiming.name }
            .compactMap { $0.field("challenge_to_command_ms").flatMap(Double.init) }
    }

    func relayAudits(_ w: AgentWorld) -> [SuspectedRelayRecord] {
        w.lockLog.entries.compactMap { if case .suspectedRelay(let r) = $0.event.kind { r } else { nil } }
    }

    @Test func withoutAnIntentTheRelayGetsNothing() throws {
        let w = try leftHome()
        w.relay!.latency = .milliseconds(8)
        w.walkPhone(to: 2)  // the relay's phone-side radio is next to the phone: it re-links
        #expect(w.advance(until: { w.phone.isLinked && w.relay!.isRelaying }, limit: .seconds(3)))
        w.loop.advance(by: .seconds(60))
        #expect(w.phone.presence == .nearby)
        #expect(!w.phoneEvents.names().contains(EventKind.phoneArrivalRequest.name))
        #expect(!w.lockEvents.names().contains(EventKind.lockArrivalTiming.name), "no arrival command reached the lock")
        #expect(!w.latchEnergised && w.lock.controller.lockState == .locked)
    }

    @Test func aRelayUnderTheBoundSucceedsInsideAnIntentWindow() throws {
        // The residual risk, shown by behaviour: NCC's ~8 ms relay at the kernel's interval
        // fits the bound, and the owner's own intent (say, a geofence as they drive past)
        // opens the door for whoever stands at it. Only distance bounding would stop this.
        let w = try leftHome()
        w.relay!.latency = .milliseconds(8)
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
        let t = try #require(timings(w).first)
        #expect(t <= w.lock.configuration.arrivalPolicy.challengeToCommandLimit.milliseconds)
        #expect(relayAudits(w).isEmpty)
    }

    @Test func aRelayAboveTheLatencyBoundIsRefusedAndAudited() throws {
        let w = try leftHome()
        w.relay!.latency = .milliseconds(60)  // two crossings per round trip: +120 ms
        w.comeHome()
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockSuspectedRelay.name) }, limit: .seconds(3)))
        w.loop.advance(by: .seconds(5))
        #expect(!w.latchEnergised && w.lock.controller.lockState == .locked)
        let audit = try #require(relayAudits(w).first)
        #expect(audit.reason == .tooSlow && audit.who == KeyID(w.key.id))
        #expect(Double(audit.elapsedMicroseconds) / 1000 > 150 && audit.intervalMicroseconds == 30_000,
                "the measured figures are in the audit log")
        #expect(w.phoneEvents.names().contains(EventKind.phoneArrivalRefused.name))
    }

    @Test func aRelayAboveTheIntervalCeilingIsRefusedAndAudited() throws {
        let w = try leftHome()
        w.relay!.latency = .zero
        try w.relay!.setDoorInterval(.milliseconds(100))
        w.comeHome()
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockSuspectedRelay.name) }, limit: .seconds(3)))
        w.loop.advance(by: .seconds(5))
        #expect(!w.latchEnergised)
        let audit = try #require(relayAudits(w).first)
        #expect(audit.reason == .intervalAboveCeiling && audit.intervalMicroseconds == 100_000)
    }

    @Test func aDroppedAnswerGetsNoRetry() throws {
        let w = try leftHome()
        w.relay!.latency = .milliseconds(8)
        // The relay withholds the arrival command's Write Response (ATT 0x13) and drops the link.
        w.relay!.dropToPhone = { $0.first == 0x13 && w.lockEvents.names().contains(EventKind.lockArrivalTiming.name) }
        w.comeHome()
        #expect(w.advance(until: { w.relay!.dropped > 0 }, limit: .seconds(3)))
        w.relay!.dropToPhone = nil
        let requests = { w.phoneEvents.names().filter { $0 == EventKind.phoneArrivalRequest.name }.count }
        #expect(requests() == 1)
        // The relay re-links at once and again later, with fresh intents: no second request
        // before the owner has been away again, and the lock wants a new departure anyway.
        #expect(w.advance(until: { w.phone.isLinked }, limit: .seconds(3)))
        w.phone.arrivalIntent()
        w.loop.advance(by: .seconds(20))
        #expect(requests() == 1)
        #expect(w.phoneStore.state?.presence.spentCycle == 1)
    }
}

/// An address is not an identity: a central that connects with a bound phone's address
/// must not cancel that phone's departure.
struct SpoofedAddressTests {
    @Test func aSpoofedAddressDoesNotStopTheLockFromLockingBehindItsOwner() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 2)
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(5)))
        // Someone inside unlocks by hand; then the owner leaves.
        w.lock.controller.submit(LockCommand(.unlock, source: .button))
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(2)))
        w.killPhone()
        w.air.removeDevice(w.phoneAddress)
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockCentralDisconnected.name) }, limit: .seconds(2)))
        // Within the grace a stranger's radio with the owner's address connects and stays.
        let spoof = w.air.addDevice(address: w.phoneAddress, position: 3)
        let raw = RawCentral(transport: spoof, lockAddress: w.lockAddress)
        raw.connect()
        #expect(w.advance(until: { raw.isReady }, limit: .seconds(3)))
        #expect(!w.lockEvents.names().contains(EventKind.lockDepartureCancelled.name))
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockDeparture.name) }, limit: .seconds(6)))
        #expect(w.advance(until: { w.lock.controller.lockState == .locked }, limit: .seconds(2)))
        #expect(raw.isReady, "the stranger is still linked: the lock locked regardless")
    }
}

/// The figures the arrival bounds are chosen from (docs/SECURITY.md, "Arrival unlock"): an
/// honest phone's challenge → command time at the kernel's interval and at the ceiling.
struct ArrivalTimingTests {
    func honestArrival(interval: Duration) throws -> (elapsed: Double, accepted: Bool) {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100)
        var p = ConnectionParameters.kernelDefault
        p.connectionInterval = interval
        try w.air.device(w.phoneAddress)!.setConnectionParameters(p)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(8)))
        w.comeHome()
        _ = w.advance(until: { w.latchEnergised }, limit: .seconds(3))
        let t = w.lockEvents.events.first { $0.name == EventKind.lockArrivalTiming.name }
        return (t?.field("challenge_to_command_ms").flatMap(Double.init) ?? .infinity, w.latchEnergised)
    }

    @Test func anHonestPhoneTakesTwoIntervalsAndFitsTheBoundUpToTheCeiling() throws {
        let policy = ArrivalPolicy()
        for interval in [Duration.milliseconds(30), .milliseconds(50)] {
            let (elapsed, accepted) = try honestArrival(interval: interval)
            #expect(elapsed <= 2 * interval.milliseconds, "read response down, command up: \(elapsed) ms")
            #expect(accepted && elapsed < policy.challengeToCommandLimit.milliseconds)
        }
    }
}
