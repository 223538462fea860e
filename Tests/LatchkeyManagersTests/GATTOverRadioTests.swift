import LatchkeyATT
import LatchkeyCentral
import LatchkeyGATT
import LatchkeyManagers
import LatchkeySim
import LatchkeyTransport
import Testing

extension RemoteService {
    func at(_ uuid: BluetoothUUID) throws -> RemoteCharacteristic { try #require(characteristic(uuid)) }
}

@Suite struct GATTOverRadioTests {
    @Test func theMTUIsExchangedOnConnectAndSetsTheUpdateLength() throws {
        let home = try Home()
        let p = try home.connected()
        let mtu = SimulatedLink.defaultMaximumTransmissionUnit  // 247 on both ends
        #expect(home.phoneApp.events.contains(.mtu(mtu)))
        #expect(p.mtu == mtu)
        #expect(p.maximumWriteValueLength(withResponse: false) == mtu - 3)
        #expect(home.lockApp.updateLengthAtConnect == [ATTLimits.minimumMTU - 3], "23 until exchanged")
        let central = try #require(home.lock.manager.centrals.first)
        #expect(central.maximumUpdateValueLength == mtu - 3)
    }

    @Test func discoveryFindsTheServiceItsCharacteristicsAndTheirDescriptors() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        #expect(p.services?.map(\.uuid) == [TestGATT.service])
        #expect(s.characteristics?.map(\.uuid) == [TestGATT.state, TestGATT.control, TestGATT.log, TestGATT.transfer])
        let state = try s.at(TestGATT.state)
        #expect(state.properties == [.read, .notify])
        #expect(state.descriptors?.map(\.uuid) == [.clientCharacteristicConfiguration, .characteristicUserDescription])
        #expect(state.valueHandle == home.lock.characteristic(TestGATT.state).valueHandle)
        #expect(try s.at(TestGATT.control).descriptors?.isEmpty == true)
        #expect(home.phoneApp.events.contains(.discoveredServices([TestGATT.service], nil)))
        #expect(home.phoneApp.events.contains(.discoveredDescriptors(
            TestGATT.state, [.clientCharacteristicConfiguration, .characteristicUserDescription], nil)))

        let description = try #require(state.descriptors?.last)
        p.readValue(for: description)
        home.settle()
        #expect(home.phoneApp.events.last == .descriptorValue(.characteristicUserDescription,
                                                               Array(TestGATT.stateDescription.utf8), nil))
    }

    @Test func aReadIsAnsweredByTheLockDelegate() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        home.lockApp.readValues[TestGATT.state] = [0x00, 0x2A]
        p.readValue(for: try s.at(TestGATT.state))
        home.settle()
        #expect(home.phoneApp.values(of: TestGATT.state) == [[0x00, 0x2A]])
        #expect(home.lockApp.events.filter { if case .read = $0 { true } else { false } }
            == [.read(Addresses.phone, TestGATT.state)])
        #expect(try s.at(TestGATT.state).value == [0x00, 0x2A])
    }

    @Test func aValueLongerThanTheMTUArrivesWholeThroughReadBlob() throws {
        let home = try Home()
        var sent: [UInt8] = []
        home.central.trace = { _, direction, pdu in if direction == "tx", let op = pdu.first { sent.append(op) } }
        let (p, s) = try home.discovered()
        sent.removeAll()
        p.readValue(for: try s.at(TestGATT.log))
        home.settle()
        #expect(home.phoneApp.values(of: TestGATT.log) == [TestGATT.logValue])
        // 400 octets at ATT_MTU 247: a Read Response carries 246, one Read Blob the other 154.
        #expect(sent == [ATTOpcode.readRequest.rawValue, ATTOpcode.readBlobRequest.rawValue])
    }

    @Test func aReadTheLockRefusesReportsTheATTError() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        home.lockApp.readValues[TestGATT.state] = nil  // the delegate answers Read Not Permitted
        p.readValue(for: try s.at(TestGATT.state))
        home.settle()
        #expect(home.phoneApp.events.last == .value(TestGATT.state, nil, .att(.readNotPermitted)))
    }

    @Test func aWriteWithResponseReachesTheDelegateAndIsAcknowledged() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        let control = try s.at(TestGATT.control)
        p.writeValue([0xC0, 0xDE], for: control, withResponse: true)
        home.settle()
        #expect(home.lockApp.events.last == .write(Addresses.phone, TestGATT.control, [0xC0, 0xDE], withResponse: true))
        #expect(home.phoneApp.events.last == .wrote(TestGATT.control, nil))
    }

    @Test func anATTErrorFromTheDelegateReachesDidWriteValue() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        let refused = ATTErrorCode(rawValue: 0x80)  // the first application error code (Vol 3 Part F 3.4.1.1)
        home.lockApp.writeError = refused
        p.writeValue([0x01], for: try s.at(TestGATT.control), withResponse: true)
        home.settle()
        #expect(home.phoneApp.events.last == .wrote(TestGATT.control, .att(refused)))
    }

    @Test func aWriteWithoutResponseReachesTheDelegateWithNoCallback() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        let before = home.phoneApp.events.count
        p.writeValue([1, 2, 3], for: try s.at(TestGATT.control), withResponse: false)
        home.settle()
        #expect(home.lockApp.events.last == .write(Addresses.phone, TestGATT.control, [1, 2, 3], withResponse: false))
        #expect(home.phoneApp.events.count == before, "a Write Command has no response")
    }

    @Test func writesWithoutResponseBeyondTheLinkQueueAllArriveInOrder() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        let control = try s.at(TestGATT.control)
        let count = 5 * SimulatedLink.defaultTransmitCapacity
        for i in 0..<count { p.writeValue([UInt8(i)], for: control, withResponse: false) }
        #expect(!p.canSendWriteWithoutResponse, "the link queue is full")
        #expect(home.loop.advance(until: { p.canSendWriteWithoutResponse }, limit: .seconds(5)))
        home.settle()
        let received = home.lockApp.events.compactMap { event -> [UInt8]? in
            if case .write(_, TestGATT.control, let v, withResponse: false) = event { v } else { nil }
        }
        #expect(received == (0..<count).map { [UInt8($0)] }, "nothing dropped under back-pressure")
        #expect(home.phoneApp.events.contains(.readyToWriteWithoutResponse))
    }

    @Test func subscribingBringsNotificationsAndUnsubscribingStopsThem() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        let state = try s.at(TestGATT.state)
        let local = home.lock.characteristic(TestGATT.state)

        p.setNotifyValue(true, for: state)
        home.settle()
        #expect(home.phoneApp.events.last == .notifying(TestGATT.state, true, nil))
        #expect(home.lockApp.events.last == .subscribed(Addresses.phone, TestGATT.state))
        #expect(local.subscribedCentrals.map(\.identifier) == [Addresses.phone])

        #expect(home.lock.manager.updateValue([0x02], for: local))
        #expect(home.lock.manager.updateValue([0x03], for: local))
        home.settle()
        #expect(home.phoneApp.values(of: TestGATT.state) == [[0x02], [0x03]])

        p.setNotifyValue(false, for: state)
        home.settle()
        #expect(home.phoneApp.events.last == .notifying(TestGATT.state, false, nil))
        #expect(home.lockApp.events.last == .unsubscribed(Addresses.phone, TestGATT.state))
        #expect(local.subscribedCentrals.isEmpty)
        home.lock.manager.updateValue([0x04], for: local)
        home.settle()
        #expect(home.phoneApp.values(of: TestGATT.state) == [[0x02], [0x03]], "no notification after unsubscribing")
    }

    @Test func subscribingWithoutDiscoveredDescriptorsFindsTheCCCDFirst() throws {
        let home = try Home()
        let p = try home.connected()
        p.discoverServices()
        home.loop.advance(until: { p.services != nil }, limit: .seconds(5))
        let s = try #require(p.service(TestGATT.service))
        p.discoverCharacteristics([TestGATT.state], for: s)
        home.settle()
        let state = try s.at(TestGATT.state)
        #expect(state.descriptors == nil)
        p.setNotifyValue(true, for: state)
        home.settle()
        #expect(home.phoneApp.events.last == .notifying(TestGATT.state, true, nil))
        #expect(home.lockApp.events.last == .subscribed(Addresses.phone, TestGATT.state))
    }

    @Test func aLinkLossUnsubscribesTheCentralOnTheLock() throws {
        let home = try Home()
        let (p, s) = try home.discovered()
        p.setNotifyValue(true, for: try s.at(TestGATT.state))
        home.settle()
        home.air.setPosition(awayPosition, of: Addresses.phone)
        home.loop.advance(by: .seconds(1))
        #expect(Array(home.lockApp.events.suffix(2)) == [.unsubscribed(Addresses.phone, TestGATT.state),
                                                         .disconnected(Addresses.phone, .connectionTimeout)])
        #expect(home.lock.characteristic(TestGATT.state).subscribedCentrals.isEmpty)
        #expect(home.lock.manager.centrals.isEmpty)
        #expect(try s.at(TestGATT.state).isNotifying == false)
    }
}

@Suite struct AdvertisingRearmTests {
    @Test func theLockAdvertisesAgainWhileAndAfterACentralIsConnected() throws {
        let home = try Home()
        try home.connected()
        // A legacy connectable advertiser stops on CONNECT_IND (Core Vol 6 Part B 4.4.2.3);
        // the manager re-arms it so a second phone can still find the lock.
        #expect(home.lock.controller.isAdvertising && home.lock.manager.isAdvertising)
        #expect(home.lock.controller.advertisement == home.lock.advertisement)
    }

    @Test func theLockReArmsAdvertisingWhenACentralDisconnects() throws {
        let home = try Home()
        let p = try home.connected()
        // The controller dropped the advertising set behind the manager's back (as one that
        // can hold a single link does): only the disconnect can bring it back.
        home.lock.controller.stopAdvertising()
        home.central.cancelPeripheralConnection(p)
        #expect(home.loop.advance(until: { !home.lockApp.disconnects.isEmpty }, limit: .seconds(1)))
        home.loop.run()
        #expect(home.lock.controller.advertisement == home.lock.advertisement)

        // And it is connectable again: the phone asks once more and links.
        try home.central.connect(p)
        let asked = home.loop.now
        #expect(home.loop.advance(until: { home.phoneApp.connects.count == 2 }, limit: .seconds(5)))
        #expect(home.loop.now - asked <= Timing.linkBound)
    }
}
