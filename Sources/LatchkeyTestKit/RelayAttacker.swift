import LatchkeySim
import LatchkeyTransport

/// The relay attack on an arrival unlock, on the simulated radio: two radios joined by a wire,
/// one beside the phone posing as the lock, one at the door as a central, carrying every ATT
/// PDU across unchanged `latency` later (NCC Group's 2022 BLE relay added about 8 ms); the
/// door-side interval is the relay's to choose (`doorInterval`). `dropToPhone` withholds an
/// answer and drops the link hoping for a retry; `withholdToDoor` keeps a sealed write back to
/// deliver later (`release`).
public final class RelayAttacker: BluetoothTransportDelegate, ATTLinkDelegate {
    public let phoneSide: SimulatedController
    public let doorSide: SimulatedController
    public let lockAddress: BluetoothAddress
    /// One-way delay added to every PDU, both directions.
    public var latency: Duration
    /// Returns true for a PDU from the lock that must not reach the phone; the relay then
    /// drops both links, as an attacker who wants another try would.
    public var dropToPhone: (([UInt8]) -> Bool)?
    /// Returns true for a PDU from the phone that the relay keeps instead of carrying;
    /// kept PDUs wait in `withheld` until `release`.
    public var withholdToDoor: (([UInt8]) -> Bool)?
    public private(set) var withheld: [[UInt8]] = []
    /// PDUs carried each way so far.
    public private(set) var carriedToDoor = 0
    public private(set) var carriedToPhone = 0
    public private(set) var dropped = 0

    private let advertisement: Advertisement
    private var phoneLink: (any ATTLink)?
    private var doorLink: (any ATTLink)?
    /// PDUs waiting for the door link to form, or for room on a full link.
    private var toDoor: [[UInt8]] = []
    private var toPhone: [[UInt8]] = []

    /// `doorInterval`: the connection interval the door-side radio asks for (its links from now on).
    public init(phoneAir: SimulatedAir, doorAir: SimulatedAir, lockAddress: BluetoothAddress,
                doorAddress: BluetoothAddress, phoneSidePosition: Double, doorSidePosition: Double,
                advertisement: Advertisement, latency: Duration, doorInterval: Duration) throws {
        precondition(phoneAir !== doorAir, "the relay joins two places out of each other's range")
        self.lockAddress = lockAddress
        self.latency = latency
        self.advertisement = advertisement
        phoneSide = phoneAir.addDevice(address: lockAddress, position: phoneSidePosition)
        doorSide = doorAir.addDevice(address: doorAddress, position: doorSidePosition)
        phoneSide.delegate = self
        doorSide.delegate = self
        try setDoorInterval(doorInterval)
        try phoneSide.startAdvertising(advertisement)
    }

    /// The door-side link's interval for links formed from now on. The supervision timeout
    /// follows it (six intervals, at least the kernel's 420 ms) so that any allowed interval fits.
    public func setDoorInterval(_ interval: Duration) throws {
        var p = ConnectionParameters.kernelDefault
        p.connectionInterval = interval
        p.supervisionTimeout = max(ConnectionParameters.kernelDefault.supervisionTimeout, interval * 6)
        try doorSide.setConnectionParameters(p)
    }

    public var isRelaying: Bool { phoneLink != nil && doorLink != nil }

    // MARK: BluetoothTransportDelegate

    public func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) {}
    public func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {}

    public func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        link.delegate = self
        if transport === phoneSide {
            phoneLink = link
            // The phone came: reach for the lock (the door radio's pending list).
            // Refused only for our own address, which the lock's never is.
            try? doorSide.addPendingConnection(to: lockAddress)
        } else {
            doorLink = link
            doorSide.removePendingConnection(to: lockAddress)
            flush()
        }
    }

    // MARK: ATTLinkDelegate

    public func link(_ link: any ATTLink, didReceive pdu: [UInt8]) {
        let fromPhone = link === phoneLink
        phoneSide.loop.schedule(after: latency) { [weak self] in
            guard let self else { return }
            if fromPhone && withholdToDoor?(pdu) == true {
                withheld.append(pdu)
                return
            } else if fromPhone {
                toDoor.append(pdu)
            } else if answersToKeep > 0, pdu.first == 0x13 || pdu.first == 0x01 {
                answersToKeep -= 1
                keptAnswers.append(pdu)
                return
            } else if dropToPhone?(pdu) == true {
                dropped += 1
                dropBoth()
                return
            } else {
                toPhone.append(pdu)
            }
            flush()
        }
    }

    public func linkIsWritable(_ link: any ATTLink) { flush() }

    /// Sends `pdu` to the lock on the door link now, as if the phone had just sent it: a kept
    /// PDU delivered late, or a copy of one carried before (a replay). The lock's answer to it
    /// stays with the relay, which asked: the phone asked nothing.
    public func release(_ pdu: [UInt8]) {
        answersToKeep += 1
        toDoor.append(pdu)
        flush()
    }

    /// Answers from the lock to released PDUs, not carried to the phone (a Write Response
    /// 0x13 or an Error Response 0x01: the next ones from the lock).
    public private(set) var keptAnswers: [[UInt8]] = []
    private var answersToKeep = 0

    public func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason) {
        if link === phoneLink { phoneLink = nil }
        if link === doorLink { doorLink = nil }
        dropBoth()
    }

    // MARK: Carrying

    private func flush() {
        if let door = doorLink { carriedToDoor += send(&toDoor, on: door) }
        if let phone = phoneLink { carriedToPhone += send(&toPhone, on: phone) }
    }

    private func send(_ queue: inout [[UInt8]], on link: any ATTLink) -> Int {
        var sent = 0
        while let pdu = queue.first, link.send(pdu) == .sent {
            queue.removeFirst()
            sent += 1
        }
        return sent
    }

    /// One side is gone: so is the other, and the relay waits for the phone again.
    private func dropBoth() {
        toDoor = []
        toPhone = []
        doorSide.removePendingConnection(to: lockAddress)
        phoneLink?.disconnect()
        doorLink?.disconnect()
        phoneLink = nil
        doorLink = nil
        // Refused only while powered off: a relay with its radio off relays nothing anyway.
        try? phoneSide.startAdvertising(advertisement)
    }
}
