import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `ConnectedDevices` on its own: what mgmt reported in, decisions out.
@Suite struct ConnectedDevicesTests {
    let devices = ConnectedDevices()
    let phone = BluetoothAddress(0xC0FFEE000001)
    let stranger = BluetoothAddress(0xC0FFEE000002)
    let wanted = BluetoothAddress(0xC0FFEE000003)

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
