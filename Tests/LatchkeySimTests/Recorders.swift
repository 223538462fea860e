import LatchkeySim
import LatchkeyTransport

/// An application attached to a controller: records everything, claims links on
/// `didConnect` (unless told not to) and can restart advertising when a link ends, as
/// the lock does.
final class AppRecorder: BluetoothTransportDelegate, ATTLinkDelegate {
    let loop: ManualEventLoop
    var claimsLinks = true
    /// Advertising to restart after every disconnect (the lock's behaviour).
    var readvertise: Advertisement?
    /// Reply sent back for every PDU received, if set.
    var onReceive: ((any ATTLink, [UInt8]) -> Void)?
    /// Called on every `linkIsWritable`, after counting it.
    var onWritable: ((any ATTLink) -> Void)?

    private(set) var reports: [(time: Instant, report: AdvertisementReport)] = []
    private(set) var states: [RadioState] = []
    private(set) var connects: [(time: Instant, link: any ATTLink)] = []
    private(set) var received: [(time: Instant, pdu: [UInt8])] = []
    private(set) var writableCount = 0
    private(set) var disconnects: [(time: Instant, reason: DisconnectReason)] = []
    weak var transport: SimulatedController?

    init(loop: ManualEventLoop, attachedTo controller: SimulatedController) {
        self.loop = loop
        self.transport = controller
        controller.delegate = self
    }

    var reportTimes: [Instant] { reports.map(\.time) }
    var receivedPDUs: [[UInt8]] { received.map(\.pdu) }
    var disconnectReasons: [DisconnectReason] { disconnects.map(\.reason) }
    var link: (any ATTLink)? { connects.last?.link }

    func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) { states.append(state) }

    func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {
        reports.append((loop.now, report))
    }

    func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        connects.append((loop.now, link))
        if claimsLinks { link.delegate = self }
    }

    func link(_ link: any ATTLink, didReceive pdu: [UInt8]) {
        received.append((loop.now, pdu))
        onReceive?(link, pdu)
    }

    func linkIsWritable(_ link: any ATTLink) {
        writableCount += 1
        onWritable?(link)
    }

    func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason) {
        disconnects.append((loop.now, reason))
        if let readvertise { try? transport?.startAdvertising(readvertise) }
    }
}

/// A small world: a lock that advertises and a phone that holds it on its pending list.
struct World {
    static let lockAddress = BluetoothAddress(0xD0_0D_00_00_00_01)
    static let phoneAddress = BluetoothAddress(0x0F_0E_00_00_00_02)
    static let lockAdvertisement = Advertisement(
        data: AdvertisingData(localName: "Latchkey"), interval: .milliseconds(100))

    let loop = ManualEventLoop()
    let air: SimulatedAir
    let lock: SimulatedController
    let phone: SimulatedController
    let lockApp: AppRecorder
    let phoneApp: AppRecorder

    init(seed: UInt64 = 1, phonePosition: Double = 1) {
        air = SimulatedAir(loop: loop, seed: seed)
        lock = air.addDevice(address: Self.lockAddress, position: 0)
        phone = air.addDevice(address: Self.phoneAddress, position: phonePosition)
        lockApp = AppRecorder(loop: loop, attachedTo: lock)
        phoneApp = AppRecorder(loop: loop, attachedTo: phone)
        lockApp.readvertise = Self.lockAdvertisement
    }

    /// Lock advertising, phone pending on it, both in range: returns once linked.
    static func linked(seed: UInt64 = 1, parameters: ConnectionParameters = .kernelDefault) throws -> World {
        let world = World(seed: seed)
        try world.phone.setConnectionParameters(parameters)
        try world.lock.startAdvertising(lockAdvertisement)
        try world.phone.addPendingConnection(to: lockAddress)
        let up = world.loop.advance(until: { world.phoneApp.link != nil && world.lockApp.link != nil },
                                    limit: .seconds(5))
        guard up else { throw NoLink() }
        return world
    }

    var phoneLink: any ATTLink { phoneApp.link! }
    var lockLink: any ATTLink { lockApp.link! }
}

struct NoLink: Error {}

extension Duration {
    static func days(_ n: Int64) -> Duration { .seconds(n * 86_400) }
}
