import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `ControllerLifecycle` on its own: a fake host that holds each command until the test
/// answers it and records what it was told.
@Suite struct ControllerLifecycleTests {
    final class Host: ControllerLifecycleHost {
        var sent: [(command: MgmtCommand, index: MgmtIndex, completion: MgmtClient.Completion)] = []
        var powerAnswers: [MgmtError?] = []
        var reports: [KernelError] = []
        var states: [RadioState] = []
        var detached = 0, reattached = 0
        var closedWith: [KernelError] = []

        func send(_ command: MgmtCommand, to index: MgmtIndex, _ completion: @escaping MgmtClient.Completion) {
            sent.append((command, index, completion))
        }
        func powerAnswered(_ error: MgmtError?) { powerAnswers.append(error) }
        func report(_ error: KernelError) { reports.append(error) }
        func stateChanged(to state: RadioState) { states.append(state) }
        func controllerDetached() { detached += 1 }
        func controllerReattached() { reattached += 1 }
        func mgmtSocketClosed(_ error: KernelError) { closedWith.append(error) }

        /// The commands sent since the last call, answered in order: `refuse` says which are
        /// refused and how; the others succeed with `settings` as Current_Settings.
        func answer(settings: MgmtSettings, refuse: (MgmtCommand) -> MgmtStatus? = { _ in nil })
            -> [(MgmtCommand, MgmtIndex)]
        {
            let pending = sent
            sent = []
            for (command, _, completion) in pending {
                if let status = refuse(command) {
                    completion(.failure(MgmtError(.commandFailed, status: status)))
                } else {
                    completion(.success(FakeKernel.settings(settings)))
                }
            }
            return pending.map { ($0.command, $0.index) }
        }
    }

    static let ours = BluetoothAddress(0x66_55_44_33_22_11)
    static let on: MgmtSettings = [.powered, .lowEnergy, .connectable]
    let host = Host()
    let lifecycle: ControllerLifecycle

    init() {
        lifecycle = ControllerLifecycle(index: MgmtIndex(0),
                                        info: ControllerInfo(address: Self.ours, supportedSettings: Self.on,
                                                             currentSettings: []))
        lifecycle.host = host
    }

    func info(_ address: BluetoothAddress) -> [UInt8] {
        ControllerInfo(address: address, supportedSettings: Self.on, currentSettings: Self.on).encoded()
    }

    @Test func setupSendsLEBondableConnectablePoweredInOrderAndThePowerRequestTakes() {
        #expect(lifecycle.state == .poweredOff)
        lifecycle.configure()
        let sent = host.answer(settings: Self.on)
        #expect(sent.map(\.0) == [.setLowEnergy(true), .setBondable(false), .setConnectable(true), .setPowered(true)])
        #expect(sent.allSatisfy { $0.1 == MgmtIndex(0) })
        #expect(host.states == [.poweredOn], "told once, when the answers power it")
        #expect(host.powerAnswers.count == 1 && host.powerAnswers[0] == nil)
        #expect(host.reports.isEmpty)
    }

    @Test func aBusyRefusalIsThePowerRequestsToAskAgainNotAState() {
        lifecycle.configure()
        _ = host.answer(settings: [.lowEnergy]) { $0 == .setPowered(true) ? .busy : nil }
        #expect(host.powerAnswers.count == 1 && host.powerAnswers[0]?.status == .busy)
        #expect(host.states.isEmpty && lifecycle.state == .poweredOff)
        #expect(host.reports.isEmpty, "asked again, not reported here")
    }

    @Test func noPermissionOrNoLEIsTheStateTheManagersSeeAndIsReported() {
        lifecycle.configure()
        _ = host.answer(settings: Self.on) { $0 == .setLowEnergy(true) ? .notSupported : nil }
        #expect(lifecycle.state == .unsupported && host.states == [.unsupported])
        #expect(host.reports.count == 1)
        #expect(host.powerAnswers.count == 1 && host.powerAnswers[0] == nil, "not asked again")

        let other = ControllerLifecycle(index: MgmtIndex(0), info: ControllerInfo(address: Self.ours,
                                                                                 supportedSettings: Self.on,
                                                                                 currentSettings: Self.on))
        other.host = host
        other.configure()
        _ = host.answer(settings: Self.on) { _ in .permissionDenied }
        #expect(other.state == .unauthorized)
    }

    @Test func theIndexGoesAndOnlyOurAddressTakesItBackAtItsNewIndex() {
        #expect(lifecycle.handle(.newSettings(Self.on), on: MgmtIndex(0)))
        #expect(host.states == [.poweredOn])
        #expect(lifecycle.handle(.indexRemoved, on: MgmtIndex(0)))
        #expect(!lifecycle.isAttached && host.detached == 1 && host.states == [.poweredOn, .poweredOff])
        #expect(!lifecycle.send(.getConnections) { _ in }, "nothing goes to a detached controller")
        #expect(lifecycle.handle(.newSettings(Self.on), on: MgmtIndex(0)), "swallowed while detached")
        #expect(host.states == [.poweredOn, .poweredOff])

        #expect(lifecycle.handle(.indexAdded, on: MgmtIndex(3)))
        #expect(host.sent.map(\.command) == [.readControllerInfo] && host.sent[0].index == MgmtIndex(3))
        host.sent.removeFirst().completion(.success(info(BluetoothAddress(0x01_02_03_04_05_06))))
        #expect(!lifecycle.isAttached, "another controller is not ours")

        #expect(lifecycle.handle(.indexAdded, on: MgmtIndex(2)))
        host.sent.removeFirst().completion(.success(info(Self.ours)))
        #expect(lifecycle.isAttached && lifecycle.index == MgmtIndex(2) && host.reattached == 1)
        #expect(host.states == [.poweredOn, .poweredOff, .poweredOn])
        let sent = host.answer(settings: Self.on)
        #expect(sent.count == 4 && sent.allSatisfy { $0.1 == MgmtIndex(2) }, "set up again, at the new index")
    }

    @Test func otherIndicesAreSwallowedAndDeviceEventsAreTheHosts() {
        #expect(lifecycle.handle(.newSettings(Self.on), on: MgmtIndex(1)))
        #expect(host.states.isEmpty, "another controller's settings are not ours")
        #expect(!lifecycle.handle(.discovering(0x06, false), on: MgmtIndex(0)))
        #expect(lifecycle.handle(.controllerError(code: 0x2a), on: MgmtIndex(0)))
        #expect(host.reports.map(\.message) == ["hci0 reported a controller hardware error (0x2a)"])
    }

    @Test func theMgmtSocketClosingDetachesAndSaysWhy() {
        _ = lifecycle.handle(.newSettings(Self.on), on: MgmtIndex(0))
        lifecycle.mgmtClosed(nil)
        #expect(host.closedWith.map(\.message) == ["the mgmt socket closed"])
        #expect(!lifecycle.isAttached && host.states == [.poweredOn, .poweredOff])
        #expect(host.detached == 0, "links end through their sockets, not through a detach")
    }
}
