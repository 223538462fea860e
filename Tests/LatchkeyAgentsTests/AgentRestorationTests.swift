import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPhoneAgent
import LatchkeySecurity
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport
import Testing

/// State preservation and restoration end to end: the agents across their own deaths on the in-process radio, counted in
/// the PDUs the phone sends. Discovery is a cost paid once per lock, not once per link or
/// once per process.
struct AgentRestorationTests {
    /// A world whose phone is linked and ready next to the lock, with its PDUs counted.
    private func readyWorld() throws -> (AgentWorld, SentPDUs) {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 1)
        let sent = SentPDUs()
        w.phone.central.trace = { _, direction, pdu in sent.record(direction, pdu) }
        #expect(w.advance(until: { w.phoneEvents.names().contains(EventKind.phoneGattReady.name) }, limit: .seconds(5)))
        #expect(w.linkSetUp(), "and the link's Service Changed chores, which follow the agent's requests")
        return (w, sent)
    }

    private func restartPhone(_ w: AgentWorld) throws -> SentPDUs {
        try w.startPhone(grace: .seconds(5))
        let sent = SentPDUs()
        w.phone.central.trace = { _, direction, pdu in sent.record(direction, pdu) }
        return sent
    }

    /// Runs `operation` from the phone and waits for its answer.
    private func command(_ w: AgentWorld, _ operation: LockOperation) -> Result<Void, PhoneAgent.CommandError>? {
        var result: Result<Void, PhoneAgent.CommandError>?
        w.phone.perform(operation) { result = $0 }
        w.advance(until: { result != nil }, limit: .seconds(10))
        return result
    }

    @Test func theFirstLinkDiscoversAndARelaunchedPhoneDoesNot() throws {
        let (w, firstLife) = try readyWorld()
        #expect(firstLife.discovery > 0, "a phone that never met the lock discovers its service")

        w.killPhone()
        let secondLife = try restartPhone(w)
        #expect(w.advance(until: { w.phone.isLinked && w.phoneEvents.names().filter { $0 == EventKind.phoneGattReady.name }.count == 2 },
                          limit: .seconds(1)))
        let names = w.phoneEvents.names()
        #expect(names.contains(EventKind.phoneRestored.name) && names.contains(EventKind.phoneLinkAdopted.name))
        #expect(!names.contains(EventKind.phoneLinkLost.name), "the link outlived the phone agent")
        #expect(secondLife.discovery == 0, "restored with services and characteristics: nothing discovered")
        #expect(secondLife.count(0x12) == 0, "still subscribed on the same link: no CCCD write")

        let answer = command(w, .unlock)
        guard case .success = answer else {
            Issue.record("unlock after the relaunch: \(String(describing: answer)) \(w.phoneEvents.events.map { "\($0.name) \($0.fields)" })")
            return
        }
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(1)))
        #expect(secondLife.discovery == 0)
    }

    @Test func aReturningPhoneReusesItsCache() throws {
        let (w, sent) = try readyWorld()
        sent.reset()
        w.walkPhone(to: 100)
        #expect(w.advance(until: { !w.phone.isLinked }, limit: .seconds(3)))
        w.walkPhone(to: 2)
        #expect(w.advance(until: { w.phoneEvents.names().filter { $0 == EventKind.phoneGattReady.name }.count == 2 },
                          limit: .seconds(3)))
        #expect(w.linkSetUp())
        #expect(sent.discovery == 0, "the lock's handles are known from the first link")
        #expect(sent.databaseHashReads == 0 && sent.count(0x0E) == 1,
                "the cache is checked against the lock's Database Hash, read by its handle with the challenge (Read Multiple)")
        #expect(sent.count(0x12) == 4,
                "the status CCCD and the `present` command, then the link's chores: Client Supported Features, Service Changed's CCCD")
    }

    @Test func aPhoneKilledMidDiscoveryResumesWhereItStopped() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 1)
        let firstLife = SentPDUs()
        w.phone.central.trace = { _, direction, pdu in firstLife.record(direction, pdu) }
        // Die once the services are known, before their characteristics are.
        let lock = w.phone.central.retrievePeripherals(withIdentifiers: [w.lockAddress])[0]
        #expect(w.advance(until: { lock.service(LockServiceUUID.service) != nil }, limit: .seconds(5)))
        #expect(lock.service(LockServiceUUID.service)?.characteristics == nil)
        #expect(firstLife.serviceDiscovery > 0)
        w.killPhone()

        let secondLife = try restartPhone(w)
        #expect(w.advance(until: { w.phoneEvents.names().contains(EventKind.phoneGattReady.name) }, limit: .seconds(2)),
                "\(w.phoneEvents.events.map { "\($0.name) \($0.fields)" })")
        #expect(secondLife.serviceDiscovery == 0, "the services came back with the restored peripheral")
        #expect(secondLife.characteristicDiscovery > 0, "the interrupted step is done again, and only it")
    }

    @Test func aRelaunchedLockKeepsThePhoneSubscribedAtTheSameHandles() throws {
        let (w, sent) = try readyWorld()
        sent.reset()
        w.killLock()
        try w.restartLock()
        w.loop.run()
        let restored = try #require(w.lockEvents.events.last { $0.name == EventKind.lockRestored.name })
        #expect(restored.field("subscribed") == "1")
        #expect(!w.phoneEvents.names().contains(EventKind.phoneLinkLost.name), "the link outlived the lock agent")

        guard case .success = command(w, .unlock) else { Issue.record("unlock after the lock's relaunch"); return }
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(1)))
        #expect(sent.discovery == 0, "the phone's cached handles are still the lock's")
    }

    @Test func aCommandLostWithTheLockIsGivenUpAndTheLinkFormsAgain() throws {
        let (w, _) = try readyWorld()
        var result: Result<Void, PhoneAgent.CommandError>?
        // The lock dies; the phone's challenge read reaches a link nobody reads and is lost;
        // the relaunched lock adopts the link but never saw the request.
        w.killLock()
        w.phone.perform(.unlock) { result = $0 }
        w.loop.advance(by: .milliseconds(200))
        try w.restartLock()
        #expect(w.advance(until: { result != nil }, limit: ChallengeIssuer.defaultLifetime + .seconds(1)))
        guard case .failure(.notDelivered) = result else { Issue.record("expected a timeout, got \(String(describing: result))"); return }
        #expect(w.phoneEvents.names().contains(EventKind.phoneCommandTimeout.name))
        #expect(!w.latchEnergised, "nothing was decided")
        #expect(w.advance(until: { w.phoneEvents.names().filter { $0 == EventKind.phoneGattReady.name }.count == 2 },
                          limit: .seconds(3)), "a fresh link, ready")
        guard case .success = command(w, .unlock) else { Issue.record("unlock on the fresh link"); return }
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(1)))
    }

    @Test func aSetupLostWithTheLockIsGivenUpAndTheLinkFormsAgain() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(30), phoneStartsAt: 100, lockSawItLeave: false)
        w.walkPhone(to: 2)
        #expect(w.advance(until: { w.phoneEvents.names().contains(EventKind.phoneLinked.name) }, limit: .seconds(3)))
        // The lock dies as the link forms: the phone's MTU exchange and discovery reach a
        // link nobody reads; the relaunched lock adopts the link without having seen them.
        w.killLock()
        w.loop.advance(by: .milliseconds(200))
        // The lock would drop the link as unauthenticated after 5 s: the phone's own
        // timeout is under test here.
        w.unauthenticatedLinkTimeout = .seconds(60)
        try w.restartLock()
        let setupLimit = PhoneAgentConfiguration(lockAddress: w.lockAddress, keyID: 1, secret: []).setupTimeout
        #expect(w.advance(until: { w.phoneEvents.names().contains(EventKind.phoneGattReady.name) }, limit: setupLimit + .seconds(2)),
                "not ATT's 30 s")
        #expect(w.phoneEvents.names().contains(EventKind.phoneSetupTimeout.name))
    }

    @Test func aControllerPowerCycleIsLoggedAndThePhoneLinksAgain() throws {
        let (w, _) = try readyWorld()
        let controller = w.air.device(w.lockAddress)!
        controller.powerOff()
        w.loop.advance(by: .seconds(1))
        controller.powerOn()
        #expect(w.advance(until: { w.phoneEvents.names().filter { $0 == EventKind.phoneGattReady.name }.count == 2 },
                          limit: .seconds(5)))
        #expect(w.lockLog.entries.contains { $0.event.kind == .doorLockAlarm(.lockRadioPowerCycled) })
    }
}
