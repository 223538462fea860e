import LatchkeyPosix
import LatchkeySim
import LatchkeyTransport
import Testing

@testable import LatchkeySimAir

/// An application on a `RemoteTransport`: records what arrives, claims links (unless told
/// not to), and can answer PDUs or re-advertise after a link ends, as the lock does.
final class RemoteApp: BluetoothTransportDelegate, ATTLinkDelegate {
    var claimsLinks = true
    var readvertise: Advertisement?
    var onReceive: ((any ATTLink, [UInt8]) -> Void)?
    var onWritable: ((any ATTLink) -> Void)?

    private(set) var states: [RadioState] = []
    private(set) var reports: [AdvertisementReport] = []
    private(set) var connected: [any ATTLink] = []
    private(set) var received: [[UInt8]] = []
    private(set) var writableCount = 0
    private(set) var disconnects: [DisconnectReason] = []
    let transport: RemoteTransport

    init(_ transport: RemoteTransport) {
        self.transport = transport
        transport.delegate = self
    }

    var link: (any ATTLink)? { connected.last }

    func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) { states.append(state) }
    func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) { reports.append(report) }
    func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        connected.append(link)
        if claimsLinks { link.delegate = self }
    }
    func link(_ link: any ATTLink, didReceive pdu: [UInt8]) {
        received.append(pdu)
        onReceive?(link, pdu)
    }
    func linkIsWritable(_ link: any ATTLink) {
        writableCount += 1
        onWritable?(link)
    }
    func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason) {
        disconnects.append(reason)
        if let readvertise { try? transport.startAdvertising(readvertise) }
    }
}

/// An air server and its agents in one test process, on one real-time loop, over a real
/// Unix socket in a fresh directory. Timings are short so each test takes well under a
/// second of real time; every wait is bounded.
final class AirHarness {
    static let lockAddress = BluetoothAddress(0xD0_0D_00_00_00_01)
    static let phoneAddress = BluetoothAddress(0x0F_0E_00_00_00_02)
    /// The shortest legacy advertising interval (Core Vol 6 Part B 4.4.2.2.1), to keep the tests fast.
    static let lockAdvertisement = Advertisement(data: AdvertisingData(localName: "Latchkey"), interval: .milliseconds(20))
    /// Fast reconnection: continuous 20 ms scan, 7.5 ms interval and 100 ms supervision
    /// timeout, the spec's minimums (Core Vol 6 Part B 4.5.1, 4.5.2).
    static let fastConnection = ConnectionParameters(scanInterval: .milliseconds(20), scanWindow: .milliseconds(20),
                                                     connectionInterval: .microseconds(7_500),
                                                     supervisionTimeout: .milliseconds(100))
    /// The bound on every wait: generous against a loaded CI machine, never reached when things work.
    static let patience = Duration.seconds(3)

    let directory: String
    let socketPath: String
    let loop = PosixEventLoop()
    let server: AirServer
    var lines: [String] = []

    init(seed: UInt64 = 7) throws {
        directory = try RuntimeDirectory.makeTemporary(prefix: "air")
        socketPath = directory + "/air.sock"
        server = AirServer(socketPath: socketPath, loop: loop, seed: seed, range: 10)
        server.log = { [unowned self] in lines.append($0) }
        try server.start()
    }

    deinit {
        server.log = nil  // it captures self, which is going away
        server.stop()
        RuntimeDirectory.remove(directory)
    }

    func agent(_ address: BluetoothAddress, at position: Double? = nil) throws -> RemoteApp {
        RemoteApp(try RemoteTransport(socketPath: socketPath, address: address, position: position, loop: loop))
    }

    func wait(_ what: Comment, sourceLocation: SourceLocation = #_sourceLocation, until condition: () -> Bool) throws {
        let held = try loop.run(until: condition, timeout: Self.patience)
        try #require(held, what, sourceLocation: sourceLocation)
    }

    func attached(_ app: RemoteApp, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try wait("welcomed by the air", sourceLocation: sourceLocation) { app.transport.isAttached }
    }

    /// The lock advertising, the phone holding it on its pending list; returns once both
    /// applications have the link.
    func linked() throws -> (lock: RemoteApp, phone: RemoteApp) {
        let lock = try agent(Self.lockAddress, at: 0)
        let phone = try agent(Self.phoneAddress, at: 1)
        try attached(lock)
        try attached(phone)
        lock.readvertise = Self.lockAdvertisement
        try phone.transport.setConnectionParameters(Self.fastConnection)
        try lock.transport.startAdvertising(Self.lockAdvertisement)
        try phone.transport.addPendingConnection(to: Self.lockAddress)
        try wait("linked") { lock.link != nil && phone.link != nil }
        return (lock, phone)
    }

    /// A control request, run to completion on the loop.
    func control<T>(_ start: (AirControlClient, @escaping (Result<T, AirControlError>) -> Void) -> Void) throws -> T {
        let client = try AirControlClient(socketPath: socketPath, loop: loop)
        defer { client.close() }
        var result: Result<T, AirControlError>?
        start(client) { result = $0 }
        try wait("control reply") { result != nil }
        return try result!.get()
    }

    func devices() throws -> [BluetoothAddress: DeviceSnapshot] {
        let list: [DeviceSnapshot] = try control { $0.listDevices($1) }
        return Dictionary(uniqueKeysWithValues: list.map { ($0.address, $0) })
    }
}
