import LatchkeyATT
import LatchkeyCentral
import LatchkeyGATT
import LatchkeyManagers
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport
import Testing

/// Restoration for the central role: the four steps, and reconciliation with what the simulated
/// system kept (its pending list and its links) while the application was dead.
@Suite struct CentralRestorationTests {
    @Test func aRequestPendingAtDeathIsHandedBackFirstAndTheLinkFormedMeanwhileIsAdopted() throws {
        let home = try Home(phonePosition: awayPosition)
        let storage = InMemoryRestorationStorage()
        var first: RestoringPhone? = home.replacePhoneApplication(storage: storage)
        try first!.manager.connect(first!.lock, options: ConnectOptions(notifyOnConnection: true))
        home.loop.advance(by: .hours(3))
        home.phone.controller.detachApplication()  // SIGKILL
        first = nil
        #expect(RestorationRegistry(storage: storage).identifiersWithPendingWork(CentralRestorationState.self) == [RestoringPhone.identifier])

        // The owner comes home while the app is dead: the system's request links.
        home.air.setPosition(1, of: Addresses.phone)
        #expect(home.loop.advance(until: { !home.phone.controller.connectedLinks.isEmpty }, limit: .seconds(1)))
        let second = RestoringPhone(home, storage: storage)
        home.loop.run()
        #expect(second.app.events.prefix(3) == [.restored([Addresses.lock: .connecting], scan: nil), .state(.poweredOn),
                                                .connected(Addresses.lock)],
                "willRestoreState first, then the state, then the connection that happened meanwhile")
        #expect(second.lock.state == .connected)
        #expect(second.manager.connectedOptions[Addresses.lock] == ConnectOptions(notifyOnConnection: true),
                "the request's options survived")
        home.loop.advance(by: .seconds(5))
        #expect(second.lock.state == .connected, "claimed: the idle-link rule did not drop it")
    }

    @Test func aLinkThatSurvivedIsAdoptedWithItsCacheSubscriptionAndMTUAndNothingIsSent() throws {
        let home = try Home()
        let storage = InMemoryRestorationStorage()
        var first: RestoringPhone? = home.replacePhoneApplication(storage: storage)
        let p = first!.lock
        try first!.manager.connect(p)
        #expect(home.loop.advance(until: { first!.app.events.contains { if case .mtu = $0 { true } else { false } } },
                                  limit: .seconds(5)))
        try home.discoverAll(p)
        let state = try #require(p.service(TestGATT.service)?.characteristic(TestGATT.state))
        p.setNotifyValue(true, for: state)
        #expect(home.loop.advance(until: { state.isNotifying }, limit: .seconds(5)))
        #expect(home.linkSetUp())
        let mtu = p.mtu
        #expect(mtu > ATTLimits.minimumMTU, "an exchanged MTU, so that keeping it means something")
        home.phone.controller.detachApplication()
        first = nil

        let second = RestoringPhone(home, storage: storage)
        home.loop.run()
        #expect(second.app.events == [.restored([Addresses.lock: .connected], scan: nil), .state(.poweredOn)])
        let restored = second.lock
        let cached = try #require(restored.service(TestGATT.service))
        #expect(cached.characteristics?.map(\.uuid) == TestGATT.definition.characteristics.map(\.uuid))
        #expect(cached.characteristic(TestGATT.state)?.isNotifying == true)
        #expect(cached.characteristic(TestGATT.state)?.clientConfigurationHandle != nil)
        #expect(restored.mtu == mtu)

        home.lock.manager.updateValue([0x02], for: home.lock.characteristic(TestGATT.state))
        home.settle()
        #expect(second.app.values(of: TestGATT.state) == [[0x02]], "the subscription lives on the same link")
        #expect(second.sent.barriers == 1, "one barrier against an answer meant for the dead process")
        #expect(second.sent.databaseHashReads == 1, "the cache is checked against the Database Hash")
        #expect(second.sent.all.count == 2, "no discovery, no CCCD write, no second MTU exchange")
    }

    @Test func discoveryInterruptedByDeathResumesWhereItStopped() throws {
        let home = try Home()
        let storage = InMemoryRestorationStorage()
        var first: RestoringPhone? = home.replacePhoneApplication(storage: storage)
        let p = first!.lock
        try first!.manager.connect(p)
        #expect(home.loop.advance(until: { p.state == .connected }, limit: .seconds(5)))
        #expect(home.linkSetUp(), "the link's own setup done, so that what the next life resumes is the app's")
        p.discoverServices()
        #expect(home.loop.advance(until: { p.services != nil }, limit: .seconds(5)))
        #expect(first!.sent.serviceDiscovery > 0)
        home.phone.controller.detachApplication()  // dies before discovering characteristics
        first = nil

        let second = RestoringPhone(home, storage: storage)
        home.loop.run()
        let service = try #require(second.lock.service(TestGATT.service), "services come back discovered")
        #expect(service.characteristics == nil, "characteristics were never discovered")
        second.lock.discoverCharacteristics(for: service)
        #expect(home.loop.advance(until: { service.characteristics != nil }, limit: .seconds(5)))
        #expect(second.sent.serviceDiscovery == 0, "services are not discovered again")
        #expect(second.sent.count(0x08) > 0, "only the missing step went out (Read By Type)")
    }

    @Test func aRequestTheSystemLostIsAssertedAgain() throws {
        let home = try Home(phonePosition: awayPosition)
        let storage = InMemoryRestorationStorage()
        var first: RestoringPhone? = home.replacePhoneApplication(storage: storage)
        try first!.manager.connect(first!.lock)
        home.phone.controller.detachApplication()
        first = nil
        // A controller power cycle (or a reboot) while the app is dead clears the kernel's list.
        home.phone.controller.powerOff()
        home.phone.controller.powerOn()
        home.loop.run()
        #expect(home.phone.controller.pendingConnections.isEmpty)

        let second = RestoringPhone(home, storage: storage)
        home.loop.run()
        #expect(home.phone.controller.pendingConnections == [Addresses.lock], "re-asserted from the preserved state")
        home.air.setPosition(1, of: Addresses.phone)
        #expect(home.loop.advance(until: { second.lock.state == .connected }, limit: .seconds(1)))
    }

    /// A phone linked to the lock dies, then its owner walks away: the link ends while no
    /// application runs.
    private func linkedPhoneDiesThenLeaves() throws -> (Home, InMemoryRestorationStorage) {
        let home = try Home()
        let storage = InMemoryRestorationStorage()
        var first: RestoringPhone? = home.replacePhoneApplication(storage: storage)
        try first!.manager.connect(first!.lock)
        #expect(home.loop.advance(until: { first!.lock.state == .connected }, limit: .seconds(5)))
        home.phone.controller.detachApplication()
        first = nil
        home.air.setPosition(awayPosition, of: Addresses.phone)
        home.loop.advance(by: .seconds(5))
        #expect(home.phone.controller.connectedLinks.isEmpty)
        return (home, storage)
    }

    @Test func aLinkLostWhileDeadIsReportedAndTheOneRequestRuleApplies() throws {
        let (home, storage) = try linkedPhoneDiesThenLeaves()
        let second = RestoringPhone(home, storage: storage)
        home.loop.run()
        #expect(second.app.events == [.restored([Addresses.lock: .connecting], scan: nil), .state(.poweredOn),
                                      .disconnected(Addresses.lock, .disconnected(.connectionTimeout))],
                "nobody heard why it ended: reported as a supervision timeout")
        #expect(home.phone.controller.pendingConnections.isEmpty, "not asked again in the callback: withdrawn")
        #expect(RestorationRegistry(storage: storage).identifiersWithPendingWork(CentralRestorationState.self).isEmpty)
    }

    @Test func anAppThatAsksAgainOnTheLostLinkKeepsItsRequest() throws {
        let (home, storage) = try linkedPhoneDiesThenLeaves()
        let second = RestoringPhone(home, storage: storage)
        second.app.onDisconnect = { central, p, _ in try? central.connect(p) }
        home.loop.run()
        #expect(second.lock.state == .connecting)
        #expect(home.phone.controller.pendingConnections == [Addresses.lock])
        home.air.setPosition(1, of: Addresses.phone)
        #expect(home.loop.advance(until: { second.lock.state == .connected }, limit: .seconds(1)))
    }

    @Test func aScanUnderWayIsHandedBackAndResumed() throws {
        let home = try Home(phonePosition: awayPosition)
        let storage = InMemoryRestorationStorage()
        var first: RestoringPhone? = home.replacePhoneApplication(storage: storage)
        try first!.manager.scanForPeripherals(withServices: [TestGATT.service], options: ScanOptions(duration: .seconds(8)))
        home.phone.controller.detachApplication()
        first = nil

        let second = RestoringPhone(home, storage: storage)
        home.loop.run()
        #expect(second.app.events.first == .restored([:], scan: [TestGATT.service]))
        #expect(second.manager.isScanning)
        home.air.setPosition(1, of: Addresses.phone)
        #expect(home.loop.advance(until: { !second.app.discoveries.isEmpty }, limit: .seconds(1)))
        home.loop.advance(by: .seconds(8))
        #expect(!second.manager.isScanning, "still bounded")
        #expect(RestorationRegistry(storage: storage).identifiersWithPendingWork(CentralRestorationState.self).isEmpty,
                "a finished scan is no pending work")
    }

    @Test func aRequestIsDurableBeforeTheSystemIsAskedForIt() throws {
        let home = try Home(phonePosition: awayPosition)
        let storage = WatchedStorage()
        let phone = home.replacePhoneApplication(storage: storage)
        var systemHeldItAtSave: [Bool] = []
        storage.onSave = { systemHeldItAtSave.append(home.phone.controller.pendingConnections.contains(Addresses.lock)) }
        try phone.manager.connect(phone.lock)
        #expect(systemHeldItAtSave == [false])
        #expect(home.phone.controller.pendingConnections == [Addresses.lock])
    }

    @Test func onlyManagersWithPendingWorkAreHandedBack() throws {
        let home = try Home(phonePosition: awayPosition)
        let storage = InMemoryRestorationStorage()
        let phone = home.replacePhoneApplication(storage: storage)
        #expect(RestorationRegistry(storage: storage).identifiersWithPendingWork(CentralRestorationState.self).isEmpty)
        try phone.manager.connect(phone.lock)
        #expect(RestorationRegistry(storage: storage).identifiersWithPendingWork(CentralRestorationState.self) == [RestoringPhone.identifier])
        phone.manager.cancelPeripheralConnection(phone.lock)
        #expect(try storage.identifiers(.central).isEmpty, "nothing pending: the entry is gone")

        // Without an identifier nothing is preserved at all.
        let plain = InMemoryRestorationStorage()
        let manager = CentralManager(transport: home.phone.controller, options: ManagerOptions(restorationStorage: plain))
        try manager.connect(manager.retrievePeripherals(withIdentifiers: [Addresses.lock])[0])
        #expect(plain.saves == 0)
    }

    @Test func anUnreadableEntryStartsFreshAndSaysSo() throws {
        let home = try Home(phonePosition: awayPosition)
        let storage = WatchedStorage()
        storage.loadFailure = RestorationStorageError.unsupportedVersion(identifier: RestoringPhone.identifier,
                                                                          found: 9, expected: 1)
        let phone = home.replacePhoneApplication(storage: storage)
        #expect(phone.app.events == [.state(.poweredOn), .preserveFailed])
    }
}
