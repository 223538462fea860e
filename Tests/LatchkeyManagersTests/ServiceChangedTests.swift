import LatchkeyATT
@testable import LatchkeyCentral
import LatchkeyGATT
@testable import LatchkeyManagers
@testable import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport
import Testing

extension TestGATT {
    /// The next version of the test service: a characteristic inserted in front, so that
    /// every handle after it moves by two.
    static var movedDefinition: GATTService {
        var d = definition
        d.characteristics.insert(GATTCharacteristic(uuid: uuid(0x7E57_0006), properties: [.read], permissions: .read,
                                                    value: [0x02]), at: 0)
        return d
    }

    /// Handles behind the manager's own services, Generic Access at 0x0001–0x0005 and Generic
    /// Attribute at 0x0006–0x000D: the test service at 0x000E–0x0019, the moved one at
    /// 0x000E–0x001B. (0x0009 and on before the Generic Access service came in front.)
    static let handles: ClosedRange<UInt16> = 0x000E...0x0019
    static let movedHandles: ClosedRange<UInt16> = 0x000E...0x001B
    /// Service Changed's value handle on every PeripheralManager: indications the phone must
    /// take for Service Changed are sent from here.
    static let serviceChanged: [UInt8] = [0x08, 0x00]
}

/// Service Changed across the lock application's death and in its life (Core Vol 3 Part G
/// 7.1), and the Database Hash a central checks its cache with (7.3): the lock tells the
/// phones whose links survived which handles moved, and nothing when none did; the phone
/// forgets what moved, is told the Core Bluetooth way, and never uses an old handle.
@Suite struct ServiceChangedTests {
    /// A restoring lock and a restoring phone, linked, the phone subscribed to the state
    /// characteristic (and, by its manager, to Service Changed).
    final class Linked {
        let home: Home
        let lockStorage = InMemoryRestorationStorage(), phoneStorage = InMemoryRestorationStorage()
        var lock: RestoringLock
        var phone: RestoringPhone
        let p: Peripheral
        let state: RemoteCharacteristic

        /// `fixedServices`: the lock's first life lays its own services out as that version did.
        init(fixedServices: FixedServices = .current) throws {
            let home = try Home()
            let lock = try home.replaceLockApplication(storage: lockStorage, fixedServices: fixedServices)
            let phone = home.replacePhoneApplication(storage: phoneStorage)
            let p = phone.lock
            try phone.manager.connect(p)
            guard home.loop.advance(until: { p.state == .connected }, limit: .seconds(5)) else { throw NotLinked() }
            try home.discoverAll(p)
            let state = try #require(p.service(TestGATT.service)?.characteristic(TestGATT.state))
            p.setNotifyValue(true, for: state)
            guard home.loop.advance(until: { state.isNotifying }, limit: .seconds(5)), home.linkSetUp(lock.manager)
            else { throw NotLinked() }
            home.settle()
            phone.sent.reset()
            (self.home, self.lock, self.phone, self.p, self.state) = (home, lock, phone, p, state)
        }

        /// SIGKILL of the lock application, and its relaunch as a version that publishes
        /// `definition` (replacing a restored service that differs, as an app would in
        /// `willRestoreState`). The PDUs the new life sends land in `sent`.
        func relaunchLock(as definition: GATTService, sent: SentPDUs, beforeRun: (RestoringLock) -> Void = { _ in }) {
            home.lock.controller.detachApplication()
            lock = RestoringLock(home, storage: lockStorage)
            beforeRun(lock)
            lock.manager.trace = { _, direction, pdu in sent.record(direction, pdu) }
            lock.app.onWillRestore = { pm, restored in
                guard let old = restored.services.first, old.definition != definition else { return }
                pm.remove(old)
                _ = try? pm.add(definition)
            }
            home.loop.run()
        }

        /// What the phone's app does after `didModifyServices`: discovers the test service
        /// again, subscribes to the state at its new handle, and gets the lock's next value.
        @discardableResult
        func discoverAndSubscribeAgain(_ p: Peripheral) throws -> RemoteCharacteristic {
            try home.discoverAll(p)
            let moved = try #require(p.service(TestGATT.service)?.characteristic(TestGATT.state))
            p.setNotifyValue(true, for: moved)
            #expect(home.loop.advance(until: { moved.isNotifying }, limit: .seconds(5)))
            lock.manager.updateValue([0x06], for: try #require(lock.characteristic(TestGATT.state)))
            home.settle()
            #expect(phone.app.values(of: TestGATT.state).last == [0x06])
            return moved
        }

        var preservedLock: PeripheralRestorationState? {
            try? lockStorage.load(PeripheralRestorationState.self, identifier: RestoringLock.identifier)
        }
    }

    static func indication(_ range: ClosedRange<UInt16>) -> [UInt8] { [0x1D] + TestGATT.serviceChanged + ServiceChangedRange(range).bytes }

    @Test func aRelaunchWithTheSameServicesSendsNothingAndThePhoneKeepsItsCache() throws {
        let w = try Linked()
        let lockSent = SentPDUs()
        w.relaunchLock(as: TestGATT.definition, sent: lockSent)
        w.home.settle()
        #expect(lockSent.count(0x1D) == 0, "no Service Changed: the handles are the ones the phone cached")
        #expect(!w.lock.app.events.contains { if case .servicesChanged = $0 { true } else { false } })
        #expect(w.lock.manager.centrals.first?.wantsServiceChanged == true, "the phone's Service Changed CCCD came back")
        #expect(w.phone.sent.all.isEmpty)
        #expect(!w.phone.app.events.contains { if case .modifiedServices = $0 { true } else { false } })
        #expect(!w.state.isInvalidated)

        w.lock.manager.updateValue([0x05], for: try #require(w.lock.characteristic(TestGATT.state)))
        w.home.settle()
        #expect(w.phone.app.values(of: TestGATT.state).last == [0x05], "the cached handle is still the state's")
    }

    @Test func aRelaunchWithAChangedServiceIndicatesTheRangeAndThePhoneDiscoversItAgain() throws {
        let w = try Linked()
        let lockSent = SentPDUs()
        w.relaunchLock(as: TestGATT.movedDefinition, sent: lockSent)
        #expect(w.lock.app.events.contains(.servicesChanged(TestGATT.movedHandles, centrals: [Addresses.phone])))
        #expect(lockSent.all.first == Self.indication(TestGATT.movedHandles), "sent at once on the adopted link")
        w.home.settle()
        #expect(lockSent.count(0x1D) == 1)
        #expect(w.phone.sent.count(0x1E) == 1, "confirmed")
        #expect(w.phone.app.events.contains(.modifiedServices([TestGATT.service])))
        #expect(w.p.service(TestGATT.service) == nil && w.state.isInvalidated)
        #expect(w.lock.characteristic(TestGATT.state)?.subscribedCentrals.isEmpty == true,
                "the subscription made to the old handle did not carry over to whatever is there now")
        #expect(w.preservedLock?.centrals.first?.serviceChange == nil, "nothing left unconfirmed")
        #expect(w.preservedLock?.databaseHash == w.lock.manager.database.hash)
        #expect(w.p.databaseHash == w.lock.manager.database.hash, "the phone's cache records the new hash")

        // The old handle is never used again: the request fails without leaving the phone.
        let before = w.phone.sent.all.count
        w.p.readValue(for: w.state)
        #expect(w.phone.app.events.last == .value(TestGATT.state, nil, .att(.invalidHandle)))
        #expect(w.phone.sent.all.count == before)

        let moved = try w.discoverAndSubscribeAgain(w.p)
        #expect(moved.valueHandle == w.state.valueHandle + 2)
    }

    /// The update that put the Generic Access service in front (0x0001–0x0005) moved the
    /// Generic Attribute service, Service Changed with it (0x0003 → 0x0008), and the app's
    /// service (0x0009 → 0x000E), on a link that survived the relaunch. The lock knows the old
    /// layout by the preserved hash, keeps the phone's Service Changed subscription at its new
    /// handle and indicates the change from there; the phone, which knows Service Changed at
    /// 0x0003, cannot take it for one — it checks the hash, drops its cache and finds
    /// everything again.
    @Test func theUpdateThatPutGenericAccessInFrontIsToldAndThePhoneFollows() throws {
        let w = try Linked(fixedServices: .genericAttributeOnly)
        #expect(w.state.valueHandle == 0x000B, "the test service at 0x0009 in the old layout")
        let oldHash = try #require(w.p.databaseHash)
        let lockSent = SentPDUs()
        w.relaunchLock(as: TestGATT.definition, sent: lockSent)
        let changed: ClosedRange<UInt16> = 0x0001...0x0019  // both layouts, whole services
        #expect(w.lock.app.events.contains(.servicesChanged(changed, centrals: [Addresses.phone])))
        #expect(lockSent.all.first == Self.indication(changed), "from Service Changed's new handle, at once")
        #expect(w.lock.manager.centrals.first?.wantsServiceChanged == true, "the subscription moved with it")
        w.home.settle()
        #expect(w.phone.sent.count(0x1E) == 1, "confirmed")
        #expect(w.phone.sent.databaseHashReads == 1, "the hash, checked")
        #expect(w.phone.app.events.contains(.modifiedServices([TestGATT.service])))
        #expect(w.state.isInvalidated && w.p.databaseHash != oldHash)
        #expect(w.p.databaseHash == w.lock.manager.database.hash)

        let moved = try w.discoverAndSubscribeAgain(w.p)
        #expect(moved.valueHandle == 0x0010)
        w.home.settle()
        #expect(w.lock.manager.centrals.first?.wantsServiceChanged == true)
        #expect(w.phone.sent.all.contains([0x12, 0x0B, 0x00, 0x01]), "Robust Caching again, at 0x000B now")
    }

    /// A relaunch that cannot tell where the preserved run had Service Changed (no layout it
    /// knows rebuilds to the preserved hash: another version's) drops that subscription too, so
    /// no indication can come; the phone, which believes it is on, learns of the change from
    /// Database Out Of Sync and the hash it then reads.
    @Test func aChangeTheLockCannotIndicateIsFoundByTheHashAfterDatabaseOutOfSync() throws {
        let w = try Linked()
        var preserved = try #require(w.preservedLock)
        preserved.databaseHash = [UInt8](repeating: 0xEE, count: 16)
        try w.lockStorage.save(preserved, identifier: RestoringLock.identifier)
        let lockSent = SentPDUs()
        w.relaunchLock(as: TestGATT.movedDefinition, sent: lockSent)
        w.home.settle()
        #expect(lockSent.count(0x1D) == 0, "no Service Changed subscription to send it on")
        #expect(w.lock.manager.centrals.first?.wantsServiceChanged == false)
        w.p.readValue(for: w.state)
        w.home.settle()
        #expect(w.phone.app.events.contains(.value(TestGATT.state, nil, .att(.databaseOutOfSync))))
        #expect(w.phone.sent.databaseHashReads == 1)
        #expect(w.phone.app.events.contains(.modifiedServices([TestGATT.service])))
        #expect(w.p.databaseHash == w.lock.manager.database.hash)
        let moved = try w.discoverAndSubscribeAgain(w.p)
        #expect(moved.valueHandle == w.state.valueHandle + 2)
        w.home.settle()
        #expect(w.lock.manager.centrals.first?.wantsServiceChanged == true, "found and enabled again")
    }

    @Test func whatThePhoneNeverConfirmedIsSentAgainAndADeadPhoneLearnsItFromTheHash() throws {
        let w = try Linked()
        w.home.phone.controller.detachApplication()  // the phone dies; its link stays for 2 s
        let firstSent = SentPDUs()
        w.relaunchLock(as: TestGATT.movedDefinition, sent: firstSent)
        w.home.settle()
        #expect(firstSent.count(0x1D) == 1, "sent into a link nobody reads: lost")
        let unconfirmed = try #require(w.preservedLock?.centrals.first?.serviceChange)
        #expect(unconfirmed.start...unconfirmed.end == TestGATT.movedHandles)

        let secondSent = SentPDUs()
        w.relaunchLock(as: TestGATT.movedDefinition, sent: secondSent)
        #expect(!w.lock.app.events.contains { if case .servicesChanged = $0 { true } else { false } },
                "no new change in this life")
        #expect(secondSent.all.first == Self.indication(TestGATT.movedHandles), "the unconfirmed one, again")
        w.home.settle()  // lost again: the phone is still dead

        // The phone comes back on the same link: its cache was made against the old database.
        w.phone = RestoringPhone(w.home, storage: w.phoneStorage)
        w.home.loop.run()
        let p = w.phone.lock
        #expect(p.state == .connected, "adopted")
        #expect(w.home.loop.advance(until: { w.phone.app.events.contains(.modifiedServices([TestGATT.service])) },
                                    limit: .seconds(1)), "the Database Hash no longer matches: the cache goes")
        #expect(w.phone.sent.databaseHashReads == 1)
        #expect(w.phone.sent.count(0x1E) == 0, "no indication reached it: the hash alone told it")
        try w.discoverAndSubscribeAgain(p)
    }

    @Test func aReturningPhoneWhoseCacheNoLongerMatchesDiscoversAgain() throws {
        let w = try Linked()
        w.phone.app.onDisconnect = { central, p, _ in try? central.connect(p) }
        w.home.air.setPosition(awayPosition, of: Addresses.phone)
        #expect(w.home.loop.advance(until: { w.p.state != .connected }, limit: .seconds(5)))
        let lockSent = SentPDUs()
        w.relaunchLock(as: TestGATT.movedDefinition, sent: lockSent)
        w.home.air.setPosition(1, of: Addresses.phone)
        #expect(w.home.loop.advance(until: { w.phone.app.events.contains(.modifiedServices([TestGATT.service])) },
                                    limit: .seconds(5)), "checked against the hash on the new link")
        #expect(lockSent.count(0x1D) == 0, "nobody to indicate to: the phone was away")
        #expect(w.phone.sent.all.first { $0.first != 0x02 } == [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B],
                "the hash is the first thing asked after the MTU")
        try w.home.discoverAll(w.p)
        let moved = try #require(w.p.service(TestGATT.service)?.characteristic(TestGATT.state))
        #expect(moved.valueHandle == w.state.valueHandle + 2)
    }

    @Test(arguments: [[0x09, 0x00, 0x14], [0x09, 0x00, 0x14, 0x00, 0x00], [0x00, 0x00, 0x14, 0x00], [0x14, 0x00, 0x09, 0x00]]
          as [[UInt8]])
    func aMalformedServiceChangedIsConfirmedReportedAndOtherwiseIgnored(value: [UInt8]) throws {
        let home = try Home()
        let sent = SentPDUs()
        home.central.trace = { _, direction, pdu in sent.record(direction, pdu) }
        let (p, s) = try home.discovered()
        sent.reset()
        // Sent on the lock's link behind its manager's back: no lock would send it.
        let link = try #require(home.lock.controller.connectedLinks.first)
        _ = link.send([0x1D] + TestGATT.serviceChanged + value)
        home.settle()
        #expect(home.phoneApp.events.last == .invalidServiceChange(value))
        #expect(sent.all == [[0x1E]], "confirmed, as every indication; nothing discovered")
        #expect(p.service(TestGATT.service) === s && !s.isInvalidated)
        p.readValue(for: try s.at(TestGATT.state))
        home.settle()
        #expect(home.phoneApp.values(of: TestGATT.state) == [[0x01]])
    }

    @Test func aServiceAddedWhileAPhoneIsConnectedIsIndicatedOnceAndARemoveAndReAddIsNot() throws {
        let home = try Home()
        let lockSent = SentPDUs()
        home.lock.manager.trace = { _, direction, pdu in lockSent.record(direction, pdu) }
        let (p, s) = try home.discovered()
        home.settle()
        let extra = GATTService(uuid: TestGATT.uuid(0x7E57_00F0), characteristics: [
            GATTCharacteristic(uuid: TestGATT.uuid(0x7E57_00F1), properties: [.read], permissions: .read, value: [0x0F]),
        ])
        let added = try home.lock.manager.add(extra)
        home.settle()
        let range = added.handles.service...added.handles.endGroup
        #expect(lockSent.all.filter { $0.first == 0x1D } == [Self.indication(range)])
        #expect(home.lockApp.events.contains(.servicesChanged(range, centrals: [Addresses.phone])))
        #expect(home.phoneApp.events.contains(.modifiedServices([])), "told, with nothing it held invalidated")
        #expect(p.service(TestGATT.service) === s, "the cached service was outside the range")

        home.lock.manager.remove(added)
        try home.lock.manager.add(extra)
        home.settle()
        #expect(lockSent.count(0x1D) == 1, "the same structure at the same handles: nothing to tell")
    }

    @Test func theExecutionModeGatesPassServiceChangesOn() throws {
        let w = try Linked()
        let phoneGate = CentralGate(central: w.phone.manager, peripherals: [w.p], gate: ApplicationGate(loop: w.home.loop))
        var lockGate: PeripheralGate?
        w.relaunchLock(as: TestGATT.movedDefinition, sent: SentPDUs()) { lock in
            lockGate = PeripheralGate(manager: lock.manager, gate: ApplicationGate(loop: w.home.loop))
        }
        w.home.settle()
        #expect(w.lock.app.events.contains(.servicesChanged(TestGATT.movedHandles, centrals: [Addresses.phone])))
        #expect(w.phone.app.events.contains(.modifiedServices([TestGATT.service])))
        _ = try #require(w.home.lock.controller.connectedLinks.first).send([0x1D] + TestGATT.serviceChanged + [0x01])
        w.home.settle()
        #expect(w.phone.app.events.last == .invalidServiceChange([0x01]))
        withExtendedLifetime((phoneGate, lockGate)) {}
    }
}
