import LatchkeySim
import LatchkeyTransport
import Testing
@testable import LatchkeyDaemons

/// What the phone's READY=1 waits for (Type=notify): its never-timing-out connect registered,
/// or the link to the lock up already — a phone restarted by systemd that adopted its link
/// from the file descriptor store has a fulfilled request and sends no Add Device, and
/// systemd would otherwise kill it at TimeoutStartSec= (HIL 86-systemd-link-survives-phone-death).
struct PhoneReadinessTests {
    /// Claims every link, as a manager does.
    final class Claimer: BluetoothTransportDelegate, ATTLinkDelegate {
        func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) {}
        func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {}
        func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) { link.delegate = self }
        func link(_ link: any ATTLink, didReceive pdu: [UInt8]) {}
        func linkIsWritable(_ link: any ATTLink) {}
        func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason) {}
    }

    @Test func thePhoneIsSettledByItsPendingConnectOrByTheLinkItself() throws {
        let loop = ManualEventLoop()
        let air = SimulatedAir(loop: loop)
        let lockAddress = BluetoothAddress(string: "C0:FF:EE:00:00:01")!
        let lock = air.addDevice(address: lockAddress)
        let phone = air.addDevice(address: BluetoothAddress(string: "C0:FF:EE:00:00:02")!, position: 1)
        let claimers = (Claimer(), Claimer())
        lock.delegate = claimers.0
        phone.delegate = claimers.1
        #expect(!PhoneDaemon.isSettled(phone, lock: lockAddress))

        try lock.startAdvertising(Advertisement(data: AdvertisingData(localName: "Door")))
        try phone.addPendingConnection(to: lockAddress)
        #expect(PhoneDaemon.isSettled(phone, lock: lockAddress))
        #expect(loop.advance(until: { !phone.connectedLinks.isEmpty }, limit: .seconds(10)))

        // Adopted: the link is up and no request is pending.
        phone.removePendingConnection(to: lockAddress)
        #expect(phone.pendingConnections.isEmpty && phone.connectedLinks.count == 1)
        #expect(PhoneDaemon.isSettled(phone, lock: lockAddress))
    }
}
