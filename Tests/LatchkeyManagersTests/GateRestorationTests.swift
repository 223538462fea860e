import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTransport
import Testing

/// The execution-mode gates sit between the managers and the application; restoration's
/// callbacks must pass through them like every other event, first and in order.
@Suite struct GateRestorationTests {
    @Test func willRestoreStateReachesTheApplicationThroughThePeripheralGate() throws {
        let storage = InMemoryRestorationStorage()
        let home = try Home(phonePosition: awayPosition)
        var first: RestoringLock? = try home.replaceLockApplication(storage: storage)
        home.lock.controller.detachApplication()
        first = nil
        _ = first

        let second = RestoringLock(home, storage: storage)
        let gate = PeripheralGate(manager: second.manager, gate: ApplicationGate(loop: home.loop))
        home.loop.run()
        #expect(second.app.events == [.restored(services: [TestGATT.service], centrals: [], advertising: true),
                                      .state(.poweredOn)])
        withExtendedLifetime(gate) {}
    }

    @Test func willRestoreStateWaitsInTheQueueWhileSuspendedAndComesFirst() throws {
        let storage = InMemoryRestorationStorage()
        let home = try Home(phonePosition: awayPosition)
        var first: RestoringLock? = try home.replaceLockApplication(storage: storage)
        home.lock.controller.detachApplication()
        first = nil
        _ = first

        let second = RestoringLock(home, storage: storage)
        let gate = PeripheralGate(manager: second.manager, gate: ApplicationGate(loop: home.loop))
        gate.suspend()
        home.loop.run()
        #expect(second.app.events.isEmpty, "nothing reaches a suspended application")
        gate.resume()
        home.loop.run()
        #expect(second.app.events.first == .restored(services: [TestGATT.service], centrals: [], advertising: true))
    }
}
