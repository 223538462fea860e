import LatchkeyATT
import LatchkeyCentral
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport
import Testing

/// Restoration for the peripheral role: advertising, services at stable handles, and the subscribed
/// centrals with their CCCD values and MTU, across the lock application's death.
@Suite struct PeripheralRestorationTests {
    /// A lock that published, a phone connected, subscribed to the state characteristic.
    private func subscribedHome(_ storage: InMemoryRestorationStorage) throws
        -> (Home, RestoringLock, Peripheral, RemoteCharacteristic)
    {
        let home = try Home()
        let lock = try home.replaceLockApplication(storage: storage)
        let p = try home.connected(lockManager: lock.manager)
        try home.discoverAll(p)
        let state = try #require(p.service(TestGATT.service)?.characteristic(TestGATT.state))
        p.setNotifyValue(true, for: state)
        #expect(home.loop.advance(until: { state.isNotifying }, limit: .seconds(5)))
        return (home, lock, p, state)
    }

    @Test func servicesComeBackAtTheirHandlesAndAdvertisingResumes() throws {
        let storage = InMemoryRestorationStorage()
        let home = try Home(phonePosition: awayPosition)
        var first: RestoringLock? = try home.replaceLockApplication(storage: storage)
        let handles = first!.manager.services.map(\.handles)
        home.lock.controller.detachApplication()
        first = nil
        #expect(!home.lock.controller.isAdvertising, "advertising ends with the process")
        #expect(RestorationRegistry(storage: storage).identifiersWithPendingWork(PeripheralRestorationState.self) == [RestoringLock.identifier])

        let second = RestoringLock(home, storage: storage)
        home.loop.run()
        #expect(second.app.events == [.restored(services: [TestGATT.service], centrals: [], advertising: true),
                                      .state(.poweredOn)], "willRestoreState first; no didAdd for restored services")
        #expect(second.manager.services.map(\.handles) == handles)
        #expect(home.lock.controller.isAdvertising)
    }

    @Test func aSubscribedCentralKeepsItsSubscriptionAndMTUOnTheSurvivingLink() throws {
        let storage = InMemoryRestorationStorage()
        let (home, firstLife, p, state) = try subscribedHome(storage)
        var first = firstLife
        let phoneSent = SentPDUs()
        home.central.trace = { _, direction, pdu in phoneSent.record(direction, pdu) }
        let updateLength = try #require(first.manager.centrals.first?.maximumUpdateValueLength)
        home.lock.controller.detachApplication()
        first = RestoringLock(home, storage: storage)  // the relaunched lock (replaces the first)

        home.loop.run()
        #expect(first.app.events == [.restored(services: [TestGATT.service], centrals: [Addresses.phone], advertising: true),
                                     .state(.poweredOn)])
        let restoredState = try #require(first.characteristic(TestGATT.state))
        #expect(restoredState.subscribedCentrals.map(\.identifier) == [Addresses.phone])
        #expect(restoredState.valueHandle == state.valueHandle, "the phone's cached handle is still right")
        #expect(first.manager.centrals.first?.maximumUpdateValueLength == updateLength,
                "the MTU negotiated before the restart, not 23")

        let long = [UInt8](repeating: 0x5A, count: updateLength)
        #expect(first.manager.updateValue(long, for: restoredState))
        home.settle()
        #expect(home.phoneApp.values(of: TestGATT.state).last == long)
        #expect(phoneSent.all.isEmpty, "the phone did nothing: no re-subscription, no discovery")
        #expect(p.state == .connected)
    }

    @Test func aCentralThatUnsubscribedBeforeTheDeathStaysUnsubscribed() throws {
        let storage = InMemoryRestorationStorage()
        let (home, firstLife, p, state) = try subscribedHome(storage)
        var first = firstLife
        p.setNotifyValue(false, for: state)
        #expect(home.loop.advance(until: { !state.isNotifying }, limit: .seconds(5)))
        home.lock.controller.detachApplication()
        first = RestoringLock(home, storage: storage)
        home.loop.run()
        let restoredState = try #require(first.characteristic(TestGATT.state))
        #expect(restoredState.subscribedCentrals.isEmpty)
        #expect(first.manager.centrals.map(\.identifier) == [Addresses.phone], "still connected")
    }

    @Test func aLinkThatDiedWithTheProcessIsNotRestored() throws {
        let storage = InMemoryRestorationStorage()
        let (home, firstLife, _, _) = try subscribedHome(storage)
        var first = firstLife
        home.lock.controller.detachApplication()
        home.loop.advance(by: SimulatedLink.unclaimedLinkTimeout + .seconds(1))
        first = RestoringLock(home, storage: storage)
        home.loop.run()
        #expect(first.app.events.first == .restored(services: [TestGATT.service], centrals: [], advertising: true))
        #expect(first.characteristic(TestGATT.state)?.subscribedCentrals.isEmpty == true)
    }

    @Test func withdrawingEverythingRemovesTheEntry() throws {
        let storage = InMemoryRestorationStorage()
        let home = try Home(phonePosition: awayPosition)
        let lock = try home.replaceLockApplication(storage: storage)
        lock.manager.stopAdvertising()
        #expect(RestorationRegistry(storage: storage).identifiersWithPendingWork(PeripheralRestorationState.self) == [RestoringLock.identifier],
                "published services are still work")
        lock.manager.removeAllServices()
        #expect(try storage.identifiers(.peripheral).isEmpty)
    }
}
