import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyPhone
import LatchkeyPhoneAgent
import LatchkeySim
import Testing

/// The lock and the phone agents end to end on the in-process radio.
struct TwoAgentsTests {
    @Test func returningHomeUnlocksOnceThenAutoRelocks() throws {
        let w = try AgentWorld(autoRelock: .seconds(30), grace: .seconds(5), phoneStartsAt: 100)
        // Phone starts out of range: after its grace it is away; the door stays locked.
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(6)))
        #expect(w.lock.controller.lockState == .locked)
        #expect(!w.latchEnergised)

        // Owner comes home: re-link, authenticated arrival unlock, the latch line goes high.
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
        #expect(w.lockEvents.names().contains(EventKind.lockCommandAccepted.name))
        // It says which decision it recorded and how long making it durable took (the disk's
        // share of command -> actuator; nothing here: an in-memory journal on a manual clock).
        let unlock = w.lockEvents.events.last { $0.name == EventKind.lockCommandAccepted.name }
        #expect(unlock?.field("decision") != nil)
        #expect(unlock?.field("durable_ms") == "0.0")
        // The Write Response reaches the phone at the next connection event.
        #expect(w.advance(until: { w.phone.presence == .home }, limit: .milliseconds(100)))

        // Auto-relock after 30 s.
        #expect(w.advance(until: { !w.latchEnergised }, limit: .seconds(31)))
        #expect(w.lock.controller.lockState == .locked)

        // A flap (link drops and returns within grace) asks for nothing more.
        let accepted = w.lockEvents.names().filter { $0 == EventKind.lockCommandAccepted.name }.count
        w.walkPhone(to: 100)
        #expect(w.advance(until: { !w.phone.isLinked }, limit: .seconds(2)))
        w.walkPhone(to: 2)
        #expect(w.advance(until: { w.phone.isLinked }, limit: .seconds(3)))
        w.loop.advance(by: .seconds(10))
        #expect(w.lockEvents.names().filter { $0 == EventKind.lockCommandAccepted.name }.count == accepted)
        #expect(!w.latchEnergised)
    }

    @Test func aBareRelinkNeverUnlocks() throws {
        // The phone starts next to the lock: home with no history, so no arrival request.
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 1)
        #expect(w.advance(until: { w.phone.isLinked }, limit: .seconds(3)))
        w.loop.advance(by: .seconds(60))
        #expect(w.phone.presence == .home)
        #expect(w.lock.controller.lockState == .locked)
        #expect(!w.latchEnergised)
        #expect(!w.lockEvents.names().contains(EventKind.lockCommandAccepted.name))
    }

    @Test func leavingLocksBehindTheOwner() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100)
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(6)))
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
        // No auto-relock configured: the door stays unlocked while the owner is home.
        w.loop.advance(by: .seconds(20))
        #expect(w.latchEnergised)
        // The owner leaves: after the departure grace the lock locks by itself.
        w.walkPhone(to: 100)
        #expect(w.advance(until: { !w.latchEnergised }, limit: .seconds(7)))
        #expect(w.lock.controller.lockState == .locked)
        #expect(w.lockEvents.names().contains(EventKind.lockDeparture.name))
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(6)))
    }

    @Test func theNextReturnUnlocksAgainAfterAnotherTrip() throws {
        let w = try AgentWorld(autoRelock: .seconds(10), grace: .seconds(5), phoneStartsAt: 100)
        for trip in 1...3 {
            #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(15)), "trip \(trip)")
            w.comeHome()
            #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)), "trip \(trip)")
            #expect(w.advance(until: { !w.latchEnergised }, limit: .seconds(11)), "trip \(trip)")
            w.walkPhone(to: 100)
        }
        #expect(w.phoneStore.state?.presence.spentCycle == 3)
    }

    @Test func aPhoneRestartedWhileAwayStillUnlocksOnReturn() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100)
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(6)))
        // The phone agent dies; its controller keeps the pending connect (the system's list).
        w.air.device(w.phoneAddress)!.detachApplication()
        w.phone = nil
        #expect(w.air.device(w.phoneAddress)!.pendingConnections.contains(w.lockAddress))
        try w.startPhone(grace: .seconds(5))
        #expect(w.phone.presence == .away)
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
    }

    @Test func arrivalIsRefusedWhileTheDoorIsOpen() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(6)))
        w.chip.pull("door", high: true)
        w.loop.advance(by: .seconds(1))
        w.comeHome()
        #expect(w.advance(until: { w.phone.presence == .home }, limit: .seconds(3)))
        #expect(!w.latchEnergised)
        #expect(w.lockEvents.events.contains { $0.name == EventKind.lockArrivalRefused.name && $0.field("reason") == "door open" })
        #expect(w.phoneEvents.names().contains(EventKind.phoneArrivalRefused.name))
    }
}

/// The audit log read over BLE through the chunked data-transfer characteristic.
struct EventLogTransferTests {
    @Test func thePhoneReadsTheLocksAuditLogInChunks() throws {
        let w = try AgentWorld(autoRelock: .seconds(5), grace: .seconds(2), phoneStartsAt: 100)
        // Five trips: an unlock and a relock each, ten events.
        for trip in 1...5 {
            // Away on both sides: the lock accepts an arrival only after a departure it saw.
            #expect(w.advance(until: { w.phone.presence == .away
                                       && w.lockEvents.names().filter { $0 == EventKind.lockDeparture.name }.count == trip },
                              limit: .seconds(10)))
            w.comeHome()
            #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
            #expect(w.advance(until: { !w.latchEnergised }, limit: .seconds(6)))
            w.walkPhone(to: 100)
        }
        w.walkPhone(to: 2)
        #expect(w.advance(until: { w.phone.isLinked }, limit: .seconds(3)))
        w.loop.advance(by: .seconds(1))
        var result: PhoneAgent.LogResult?
        w.phone.fetchLog(from: 1, limit: 100) { result = $0 }
        #expect(w.advance(until: { result != nil }, limit: .seconds(5)))
        let events = try #require(try? result?.get())
        #expect(events.count == w.lockLog.entries.count)
        #expect(events.map(\.sequence) == w.lockLog.entries.map(\.sequence))
        #expect(events.map(\.event) == w.lockLog.entries.map(\.event))
        // 29-octet events in 5-octet frames: more than one notification's worth at MTU 247.
        #expect(events.count * 34 > 244)
        let unlocks = events.filter { if case .lockOperation(let r) = $0.event.kind { r.operation == .unlock } else { false } }
        #expect(unlocks.count == 5)
    }
}
