import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `ConnectedDevices` on its own: what mgmt reported in, decisions out.
@Suite struct ConnectedDevicesTests {
    /// Holds each command until the test answers it; records the claims and changes.
    final class Host: ConnectedDevicesHost {
        var sent: [(command: MgmtCommand, completion: MgmtClient.Completion)] = []
        var kept: Set<BluetoothAddress> = []
        var sweepIsDue = true
        var linked: [BluetoothAddress] = []
        var changes = 0

        func send(_ command: MgmtCommand, _ completion: @escaping MgmtClient.Completion) -> Bool {
            sent.append((command, completion))
            return true
        }
        func keeps(_ peer: BluetoothAddress) -> Bool { kept.contains(peer) }
        func deviceLinked(_ peer: BluetoothAddress) { linked.append(peer) }
        func linkedDevicesChanged() { changes += 1 }
    }

    let devices = ConnectedDevices()
    let host = Host()
    let phone = BluetoothAddress(0xC0FFEE000001)
    let stranger = BluetoothAddress(0xC0FFEE000002)
    let wanted = BluetoothAddress(0xC0FFEE000003)

    init() { devices.host = host }

    /// Get Connections' reply: the count, then each address and its type.
    func connections(_ peers: [BluetoothAddress]) -> [UInt8] {
        [UInt8(peers.count), 0] + peers.flatMap { $0.littleEndianBytes + [1] }
    }

    @Test func deviceEventsAreTakenAndTheOthersLeftToTheHost() {
        #expect(devices.handle(.deviceConnected(DeviceConnected(address: MgmtDeviceAddress(phone), flags: 0))))
        #expect(devices.contains(phone) && host.linked == [phone] && host.changes == 1)
        #expect(devices.handle(.deviceDisconnected(MgmtDeviceAddress(phone), .remoteHost)))
        #expect(!devices.contains(phone) && host.changes == 2)
        #expect(devices.takeReason(for: phone) == .remoteUserTerminated)
        #expect(!devices.handle(.discovering(0x06, false)))
        #expect(host.changes == 2 && host.sent.isEmpty)
    }

    @Test func readingTheLinksSweepsTheStaleOnesOnceAndOffersTheRest() throws {
        host.kept = [phone]
        devices.read()
        #expect(host.sent.map(\.command) == [.getConnections])
        host.sent.removeFirst().completion(.success(connections([stranger, phone, wanted])))
        #expect(host.sent.map(\.command) == [.disconnect(stranger), .disconnect(wanted)], "neither held nor wanted")
        #expect(host.linked == [phone], "what is left linked is offered")
        #expect(host.changes == 1)
        host.sent = []
        devices.connected(stranger)
        devices.sweepStaleLinks()
        #expect(host.sent.isEmpty, "the sweep runs once")
    }

    @Test func aReadWhileNotAdvertisingSweepsNothingAndARefusalKeepsWhatWasReported() {
        host.sweepIsDue = false
        devices.connected(phone)
        devices.read()
        host.sent.removeFirst().completion(.failure(MgmtError(.commandFailed, status: .notPowered)))
        #expect(devices.contains(phone) && host.linked.isEmpty && host.changes == 0, "nothing learned")
        devices.read()
        host.sent.removeFirst().completion(.success(connections([stranger])))
        #expect(host.sent.isEmpty, "not advertising: no sweep")
        #expect(host.linked == [stranger] && !devices.contains(phone))
    }

    @Test func aDisconnectReasonIsHandedToTheLinkOnceAndANewLinkClearsAStaleOne() {
        devices.connected(phone)
        devices.disconnected(phone, reason: .remoteUserTerminated)
        #expect(!devices.contains(phone))
        #expect(devices.takeReason(for: phone) == .remoteUserTerminated)
        #expect(devices.takeReason(for: phone) == nil, "taken once")
        devices.disconnected(phone, reason: .connectionTimeout)
        devices.connected(phone)
        #expect(devices.contains(phone))
        #expect(devices.takeReason(for: phone) == nil, "the reason of the link before is not this link's")
    }

    @Test func theEntriesWithNoLinkAreThePendingOnesNotConnected() {
        devices.connected(phone)
        #expect(devices.unlinked(among: [wanted, phone, stranger]) == [stranger, wanted])
        devices.removeAll()
        #expect(devices.unlinked(among: [phone]) == [phone])
    }

    @Test func theSweepWaitsForGetConnectionsThenRunsOnce() {
        #expect(devices.sweepStale(holding: { _ in false }).isEmpty, "nothing known yet")
        devices.learned([phone, stranger, wanted])
        #expect(devices.sorted == [phone, stranger, wanted])
        let stale = devices.sweepStale(holding: { $0 == phone || $0 == wanted })
        #expect(stale == [stranger])
        #expect(!devices.contains(stranger) && devices.contains(phone) && devices.contains(wanted))
        devices.connected(stranger)
        #expect(devices.sweepStale(holding: { _ in false }).isEmpty, "the sweep runs once")
        #expect(devices.contains(stranger))
    }

    @Test func aRefusedGetConnectionsKeepsWhatMgmtReportedButAllowsTheSweep() {
        devices.connected(phone)
        devices.learned(nil)
        #expect(devices.contains(phone))
        #expect(devices.sweepStale(holding: { _ in false }) == [phone])
    }
}
