import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeySim
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `ControllerRequests` on its own: a fake host that holds each command until the test
/// answers it, on a manual clock.
@Suite struct ControllerRequestsTests {
    /// The controller as the requests see it: what was sent and not yet answered, and what was reported.
    final class Host: ControllerRequestsHost {
        var isAttached = true
        var isPoweredOn = true
        var hasPeripheralLink = false
        var linked: Set<BluetoothAddress> = []
        var sent: [(command: MgmtCommand, completion: MgmtClient.Completion)] = []
        var refusals: [TransportRefusal] = []
        var commandRefusals: [KernelError] = []
        var powerRetries = 0
        var afterAnswered: [() -> Void] = []

        func send(_ command: MgmtCommand, _ completion: @escaping MgmtClient.Completion) -> Bool {
            guard isAttached else { return false }
            sent.append((command, completion))
            return true
        }
        func unlinked(among peers: Set<BluetoothAddress>) -> [BluetoothAddress] { peers.subtracting(linked).sorted() }
        func requestRefused(_ refusal: TransportRefusal, _ error: MgmtError) { refusals.append(refusal) }
        func commandRefused(_ error: KernelError) { commandRefusals.append(error) }
        func powerRetryDue() { powerRetries += 1 }
        func afterRequestsAnswered(_ body: @escaping () -> Void) { afterAnswered.append(body) }

        /// The commands sent since the last call, answered in order by `answer` (success unless it says).
        func answer(_ answer: (MgmtCommand) -> MgmtError? = { _ in nil }) -> [MgmtCommand] {
            let pending = sent
            sent = []
            for (command, completion) in pending {
                if let error = answer(command) { completion(.failure(error)) } else { completion(.success([])) }
            }
            return pending.map(\.command)
        }
    }

    static let busy = MgmtError(.commandFailed, status: .busy)
    static let phone = BluetoothAddress(0x11_22_33_44_55_66)
    static let lock = BluetoothAddress(0x66_55_44_33_22_11)
    let loop = ManualEventLoop()
    let host = Host()
    let requests: ControllerRequests

    init() {
        requests = ControllerRequests(loop: loop)
        requests.host = host
        requests.backoff = .init(first: .milliseconds(100), cap: .seconds(1))
        requests.readvertiseDelay = .seconds(2)
    }

    func advertisingSet(_ name: String) throws -> ControllerRequests.AdvertisingSet {
        let advertisement = Advertisement(data: AdvertisingData(localName: name))
        return .init(advertisement: advertisement,
                     instance: try AdvertisingInstance(instance: KernelTransport.advertisingInstance, advertisement),
                     timing: try SystemConfiguration.peripheral(advertisingInterval: advertisement.interval))
    }

    @Test func advertisingIsSentOnceTimingFirstAndNotAgainWhenTheSameIsAsked() throws {
        let set = try advertisingSet("Door")
        #expect(requests.advertise(set))
        #expect(host.answer().map(\.opcode) == [.setDefaultSystemConfiguration, .addAdvertising])
        #expect(requests.isAdvertising)
        #expect(!requests.advertise(set), "the mirror holds it: nothing is sent")
        #expect(host.sent.isEmpty)
        host.isPoweredOn = false
        #expect(!requests.isAdvertising, "wanted, but not held by a controller that is off")
    }

    @Test func aRefusedTimingIsARefusalOfTheAdvertisingAskedAgainAfterTheBackoff() throws {
        requests.advertise(try advertisingSet("Door"))
        _ = host.answer { $0.opcode == .setDefaultSystemConfiguration ? Self.busy : nil }
        #expect(host.refusals.map(\.request) == [.advertising])
        #expect(host.refusals.first?.attempt == 1 && host.refusals.first?.retryIn == .milliseconds(100))
        #expect(!requests.isAdvertising && requests.isRetrying(.advertising))
        loop.advance(by: .milliseconds(99))
        #expect(host.sent.isEmpty)
        loop.advance(by: .milliseconds(1))
        #expect(host.answer().map(\.opcode) == [.setDefaultSystemConfiguration, .addAdvertising])
        #expect(requests.isAdvertising && !requests.isRetrying(.advertising))
        #expect(host.refusals.count == 1)
    }

    @Test func stoppingAdvertisingWithdrawsTheRetryAndRemovesTheInstance() throws {
        requests.advertise(try advertisingSet("Door"))
        _ = host.answer { $0.opcode == .addAdvertising ? Self.busy : nil }
        requests.stopAdvertising()
        #expect(host.answer() == [.removeAdvertising(instance: KernelTransport.advertisingInstance)])
        #expect(!requests.isRetrying(.advertising))
        loop.advance(by: .seconds(5))
        #expect(host.sent.isEmpty, "no attempt for a wish withdrawn")
    }

    @Test func aDiscoveryStopOfOurOwnIsNotTakenForTheKernelEndingTheScan() throws {
        let scan = ScanParameters()
        requests.startScanning(scan, timing: try SystemConfiguration.discovery(scan))
        #expect(!requests.discoveryStopped(), "Start Discovery in flight: the Discovering event is ours")
        #expect(host.answer().map(\.opcode) == [.setDefaultSystemConfiguration, .startDiscovery])
        #expect(requests.isScanning)
        #expect(requests.discoveryStopped(), "the kernel ended it by itself: restarted")
        #expect(host.answer().map(\.opcode) == [.startDiscovery])
        requests.stopScanning()
        #expect(!requests.discoveryStopped() && !requests.isScanning)
        #expect(host.answer().map(\.opcode) == [.stopDiscovery])
    }

    @Test func aPendingEntryIsSentOnceAndRemovedOnce() {
        #expect(requests.addPending(Self.lock))
        #expect(!requests.addPending(Self.lock), "the kernel holds it already")
        #expect(host.answer() == [.addDevice(Self.lock, .autoConnect)])
        #expect(!requests.deviceRemoved(Self.phone), "not ours: left alone")
        #expect(requests.deviceRemoved(Self.lock))
        #expect(host.answer() == [.addDevice(Self.lock, .autoConnect)])
        #expect(requests.removePending(Self.lock))
        #expect(!requests.removePending(Self.lock))
        #expect(host.answer() == [.removeDevice(Self.lock)])
        #expect(requests.pendingConnections.isEmpty)
    }

    @Test func aRefusedEntryNoLongerWantedIsNotAskedAgain() {
        _ = requests.addPending(Self.lock)
        _ = requests.removePending(Self.lock)
        _ = host.answer { $0.opcode == .addDevice ? Self.busy : nil }
        #expect(host.refusals.isEmpty && !requests.isRetrying(.pendingConnection(Self.lock)))
    }

    @Test func newConnectionTimingResendsOnlyTheEntriesWithNoLink() throws {
        _ = requests.addPending(Self.lock)
        _ = requests.addPending(Self.phone)
        _ = host.answer()
        host.linked = [Self.phone]
        let timing = try SystemConfiguration.connection(ConnectionParameters())
        requests.setConnectionTiming(timing)
        #expect(host.answer() == [.setDefaultSystemConfiguration(timing), .addDevice(Self.lock, .autoConnect)])
        host.isPoweredOn = false
        requests.setConnectionTiming(timing)
        #expect(host.answer() == [.setDefaultSystemConfiguration(timing)], "a controller that is off scans for nothing")
    }

    @Test func reassertionSendsTimingAdvertisingAndEveryEntryInOrder() throws {
        let timing = try SystemConfiguration.connection(ConnectionParameters())
        requests.setConnectionTiming(timing)
        requests.advertise(try advertisingSet("Door"))
        _ = requests.addPending(Self.phone)
        _ = requests.addPending(Self.lock)
        _ = host.answer()
        requests.reassert()
        #expect(host.answer().map(\.opcode) == [.setDefaultSystemConfiguration, .setDefaultSystemConfiguration,
                                                  .addAdvertising, .addDevice, .addDevice])
    }

    @Test func aRetryDueWhileDetachedIsDroppedAndReleasesItsWaiters() {
        _ = requests.addPending(Self.lock)
        _ = host.answer { _ in Self.busy }
        var ran = 0
        #expect(requests.wait { ran += 1 }, "a request waits for its next attempt")
        host.isAttached = false
        loop.advance(by: .milliseconds(100))
        #expect(!requests.isRetrying(.pendingConnection(Self.lock)))
        #expect(host.afterAnswered.count == 1)
        host.afterAnswered.forEach { $0() }
        #expect(ran == 1)
        #expect(requests.pendingConnections == [Self.lock], "still wanted: re-asserted when the index returns")
    }

    @Test func aRefusedPowerRequestIsTheHostsToSendAgain() {
        requests.refused(.power, Self.busy)
        loop.advance(by: .milliseconds(100))
        #expect(host.powerRetries == 1)
        requests.took(.power)
        #expect(!requests.isRetrying(.power))
    }

    @Test func aRefusedPlainCommandIsReportedAfterItsCorrection() {
        var corrected = false
        requests.command(.removeDevice(Self.lock)) { _ in corrected = true }
        _ = host.answer { _ in Self.busy }
        #expect(corrected && host.commandRefusals.count == 1)
    }

    @Test func theInstanceIsAddedBesideACentralsLinkUntilTheControllerRefusesItOnce() throws {
        requests.advertise(try advertisingSet("Door"))
        _ = host.answer()
        requests.centralLinked()
        #expect(host.answer { $0.opcode == .addAdvertising ? Self.busy : nil }.map(\.opcode)
                    == [.setDefaultSystemConfiguration, .addAdvertising])
        #expect(requests.advertisesWhileLinked == false)
        #expect(host.commandRefusals.count == 1, "reported once")
        #expect(host.refusals.isEmpty, "the advertising asked for is not refused: it stays held")
        requests.centralLinked()
        #expect(host.sent.isEmpty, "not tried again beside a link")
    }

    @Test func aCentralLeavingReAddsTheInstanceAfterTheDelayUnlessAnotherIsLinked() throws {
        requests.advertise(try advertisingSet("Door"))
        _ = host.answer()
        requests.centralLeft()
        loop.advance(by: .milliseconds(1_999))
        #expect(host.sent.isEmpty)
        loop.advance(by: .milliseconds(1))
        #expect(host.answer().map(\.opcode) == [.setDefaultSystemConfiguration, .addAdvertising])
        host.hasPeripheralLink = true
        requests.centralLeft()
        loop.advance(by: .seconds(2))
        #expect(host.sent.isEmpty, "another central linked meanwhile: the kernel stopped advertising for it")
    }

    @Test func aChangeOfPowerCancelsTheReAddAndNothingIsReAddedWithoutAdvertising() throws {
        requests.centralLeft()
        loop.advance(by: .seconds(5))
        #expect(host.sent.isEmpty, "nothing advertised: nothing to re-add")
        requests.advertise(try advertisingSet("Door"))
        _ = host.answer()
        requests.centralLeft()
        requests.powerChanged()
        loop.advance(by: .seconds(5))
        #expect(host.sent.isEmpty)
    }
}
