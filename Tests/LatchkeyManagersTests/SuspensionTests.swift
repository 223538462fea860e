import LatchkeyATT
import LatchkeyCentral
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTransport
import Testing

/// Suspension and connection alerts on the simulated radio.
@Suite struct CentralSuspensionTests {
    /// A linked, subscribed phone whose application layer sits behind a gate.
    private func subscribed(_ home: Home, options: ConnectOptions = ConnectOptions(),
                            capacity: Int = ApplicationGate.defaultCapacity)
        throws -> (CentralGate, RecordingAlertSink, Peripheral, RemoteCharacteristic)
    {
        let p = home.lockPeripheral
        try home.central.connect(p, options: options)
        #expect(home.loop.advance(until: { home.phoneApp.connects.count == 1 }, limit: .seconds(5)))
        p.discoverServices()
        #expect(home.loop.advance(until: { p.services != nil }, limit: .seconds(5)))
        let s = try #require(p.service(TestGATT.service))
        p.discoverCharacteristics(for: s)
        #expect(home.loop.advance(until: { s.characteristics != nil }, limit: .seconds(5)))
        let state = try #require(s.characteristic(TestGATT.state))
        p.setNotifyValue(true, for: state)
        #expect(home.loop.advance(until: { state.isNotifying }, limit: .seconds(5)))
        let alerts = RecordingAlertSink()
        let gate = CentralGate(central: home.central, peripherals: [p],
                               gate: ApplicationGate(loop: home.loop, capacity: capacity), alerts: alerts)
        return (gate, alerts, p, state)
    }

    /// The phone walks out of range until the link drops, then back until it re-forms.
    private func bounce(_ home: Home) {
        home.air.setPosition(300, of: Addresses.phone)
        #expect(home.loop.advance(until: { !home.lockApp.disconnects.isEmpty }, limit: .seconds(10)))
        home.air.setPosition(1, of: Addresses.phone)
        #expect(home.loop.advance(until: { home.lockApp.events.count { if case .connected = $0 { true } else { false } } == 2 },
                                  limit: .seconds(10)))
    }

    private func notify(_ home: Home, _ values: [[UInt8]]) {
        for v in values {
            home.lock.manager.updateValue(v, for: home.lock.characteristic(TestGATT.state))
            home.settle()
        }
    }

    @Test func eventsWhileSuspendedAreDeliveredInOrderOnResumeNoneLostNoneDuplicated() throws {
        let home = try Home()
        let (gate, _, _, _) = try subscribed(home)
        let before = home.phoneApp.events.count
        gate.suspend()
        notify(home, [[1], [2], [3]])
        #expect(home.phoneApp.events.count == before, "a suspended foreground app hears nothing")
        #expect(gate.gate.queuedEvents.count == 3)

        // The link drops and comes back while suspended: the system keeps the request.
        home.air.setPosition(300, of: Addresses.phone)
        #expect(home.loop.advance(until: { !home.lockApp.disconnects.isEmpty }, limit: .seconds(10)))
        #expect(home.phone.controller.pendingConnections.contains(Addresses.lock))
        home.air.setPosition(1, of: Addresses.phone)
        #expect(home.loop.advance(until: { home.lockApp.events.count { if case .connected = $0 { true } else { false } } == 2 }, limit: .seconds(10)))
        home.settle()
        #expect(home.phoneApp.events.count == before)

        gate.resume()
        let delivered = Array(home.phoneApp.events.dropFirst(before))
        let expected: [CentralEvent] = [.value(TestGATT.state, [1], nil), .value(TestGATT.state, [2], nil),
                                        .value(TestGATT.state, [3], nil)]
        #expect(Array(delivered.prefix(3)) == expected)
        #expect(delivered.dropFirst(3).first.map { if case .disconnected(Addresses.lock, _) = $0 { true } else { false } } == true)
        #expect(delivered.contains(.connected(Addresses.lock)))
        #expect(delivered.firstIndex(of: .connected(Addresses.lock))! > 3)
        #expect(delivered.count { $0 == .connected(Addresses.lock) } == 1)
        #expect(gate.gate.queuedEvents.isEmpty)

        // After the resume, events flow straight through again.
        let now = home.phoneApp.events.count
        home.central.cancelPeripheralConnection(home.lockPeripheral)
        home.settle()
        #expect(home.phoneApp.events.count > now)
    }

    @Test func aFullQueueReportsEveryLostEventAndTheResumeCountsThem() throws {
        let home = try Home()
        let (gate, _, _, _) = try subscribed(home, capacity: 2)
        var reports: [GateReport] = []
        gate.gate.onReport = { reports.append($0) }
        gate.suspend()
        notify(home, [[1], [2], [3], [4]])
        #expect(reports.count { if case .overflow = $0 { true } else { false } } == 2)
        gate.resume()
        #expect(reports.last == .resumed(delivered: 2, lost: 2))
        #expect(home.phoneApp.values(of: TestGATT.state).suffix(2) == [[1], [2]])
    }

    @Test func alertsFollowTheConnectOptionsAndOnlyWhileSuspended() throws {
        let home = try Home()
        let options = ConnectOptions(notifyOnConnection: true, notifyOnDisconnection: true, notifyOnNotification: true)
        let (gate, alerts, _, _) = try subscribed(home, options: options)
        notify(home, [[1]])
        #expect(alerts.alerts.isEmpty, "an app in the foreground is told directly")

        gate.suspend()
        notify(home, [[2]])
        bounce(home)
        #expect(alerts.alerts.map(\.event) == [.notification, .disconnection, .connection])
        #expect(alerts.alerts.allSatisfy { $0.device == Addresses.lock })
    }

    @Test func withoutTheOptionsNoAlertIsRaised() throws {
        let home = try Home()
        let (gate, alerts, _, _) = try subscribed(home)
        gate.suspend()
        notify(home, [[2]])
        bounce(home)
        #expect(alerts.alerts.isEmpty)
    }

    @Test func aBackgroundAppIsWokenForItsEventsInsteadOfQueuingThem() throws {
        let home = try Home()
        let (gate, _, _, _) = try subscribed(home)
        var reports: [GateReport] = []
        gate.gate.onReport = { reports.append($0) }
        try gate.setMode(.background)
        gate.suspend()
        notify(home, [[7]])
        #expect(home.phoneApp.values(of: TestGATT.state).last == [7])
        #expect(gate.gate.queuedEvents.isEmpty)
        #expect(reports.contains(.woke(event: "value \(TestGATT.state) \(Addresses.lock)")))
    }
}

@Suite struct PeripheralSuspensionTests {
    @Test func aSuspendedForegroundLockStopsAdvertisingAnswersWithAnErrorAndQueuesItsEvents() throws {
        let home = try Home()
        let gate = PeripheralGate(manager: home.lock.manager, gate: ApplicationGate(loop: home.loop))
        let (p, s) = try home.discovered()
        let before = home.lockApp.events.count
        gate.suspend()
        #expect(!home.lock.controller.isAdvertising)
        home.loop.advance(by: .seconds(60))
        #expect(!home.lock.controller.isAdvertising, "not re-armed by a connection either")

        let state = try #require(s.characteristic(TestGATT.state))
        p.readValue(for: state)
        home.settle()
        #expect(home.phoneApp.events.last == .value(TestGATT.state, nil, .att(.unlikelyError)))
        p.setNotifyValue(true, for: state)
        home.settle()
        #expect(home.lockApp.events.count == before, "the subscription waits in the queue")

        gate.resume()
        #expect(home.lock.controller.isAdvertising)
        #expect(home.lockApp.events.dropFirst(before).first == .subscribed(Addresses.phone, TestGATT.state))
    }

    @Test func aSuspendedBackgroundLockKeepsAdvertisingWithoutItsNameAndIsWokenForReads() throws {
        let home = try Home()
        let gate = PeripheralGate(manager: home.lock.manager, gate: ApplicationGate(loop: home.loop))
        var reports: [GateReport] = []
        gate.gate.onReport = { reports.append($0) }
        gate.setMode(.background)
        gate.suspend()
        #expect(home.lock.controller.isAdvertising && home.lock.controller.advertisement?.data.localName == nil)
        let (p, s) = try home.discovered()
        let state = try #require(s.characteristic(TestGATT.state))
        p.readValue(for: state)
        home.settle()
        #expect(home.phoneApp.events.last == .value(TestGATT.state, [0x01], nil))
        #expect(reports.contains(.woke(event: "read \(TestGATT.state)")))
        #expect(reports.contains { if case .wakeHandled(event: "read \(TestGATT.state)", _) = $0 { true } else { false } })
    }
}

/// The gate on its own: overflow and the wake budget on ManualEventLoop time.
@Suite struct ApplicationGateTests {
    @Test func aWakeOverItsBudgetIsReportedAtTheBudgetAndItsDurationWhenItEnds() {
        let loop = ManualEventLoop()
        let gate = ApplicationGate(loop: loop, mode: .background)
        var reports: [GateReport] = []
        gate.onReport = { reports.append($0) }
        gate.suspend()
        var work: ApplicationGate.BackgroundWork?
        gate.deliver("connected") { work = gate.beginBackgroundWork() }
        #expect(reports == [.suspended, .woke(event: "connected")])
        loop.advance(by: .seconds(10) - .nanoseconds(1))
        #expect(reports.count == 2)
        loop.advance(by: .nanoseconds(1))
        #expect(reports.last == .wakeOverBudget(event: "connected", elapsed: .seconds(10), budget: .seconds(10)))
        loop.advance(by: .seconds(2))
        work?.end()
        #expect(reports.last == .wakeHandled(event: "connected", duration: .seconds(12)))
        #expect(reports.count { if case .wakeOverBudget = $0 { true } else { false } } == 1)
    }

    @Test func aQuickWakeIsMeasuredWithoutAWarning() {
        let loop = ManualEventLoop()
        let gate = ApplicationGate(loop: loop, mode: .background, wakeBudget: .seconds(10))
        var reports: [GateReport] = []
        gate.onReport = { reports.append($0) }
        gate.suspend()
        var work: ApplicationGate.BackgroundWork?
        gate.deliver("notification") { work = gate.beginBackgroundWork() }
        loop.advance(by: .seconds(3))
        work?.end()
        loop.advance(by: .seconds(30))
        #expect(reports == [.suspended, .woke(event: "notification"),
                            .wakeHandled(event: "notification", duration: .seconds(3))])
    }

    @Test func overflowIsReportedForEachLostEventAndResumeDeliversTheRestInOrder() {
        let loop = ManualEventLoop()
        let gate = ApplicationGate(loop: loop, capacity: 2)
        var reports: [GateReport] = []
        var delivered: [Int] = []
        gate.onReport = { reports.append($0) }
        gate.suspend()
        for i in 1...4 { gate.deliver("e\(i)") { delivered.append(i) } }
        #expect(delivered.isEmpty)
        #expect(reports == [.suspended, .overflow(event: "e3", capacity: 2, lostSoFar: 1),
                            .overflow(event: "e4", capacity: 2, lostSoFar: 2)])
        gate.resume()
        #expect(delivered == [1, 2])
        #expect(reports.last == .resumed(delivered: 2, lost: 2))
    }
}
