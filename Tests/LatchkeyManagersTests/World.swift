import LatchkeyATT
import LatchkeyCentral
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTransport

/// The GATT service the test locks publish. UUIDs are random 128-bit values ("7e57" = test).
enum TestGATT {
    static func uuid(_ n: UInt32) -> BluetoothUUID {
        BluetoothUUID(value: UInt128(n) << 96 | 0x5A11_4E5A_9B3F_7E57_7E57_7E57)
    }
    static let service = uuid(0x7E57_0001)
    /// Read + notify, answered by the delegate (a dynamic value).
    static let state = uuid(0x7E57_0002)
    /// Write with and without response, answered by the delegate.
    static let control = uuid(0x7E57_0003)
    /// A stored value longer than one Read Response at any MTU this bearer allows.
    static let log = uuid(0x7E57_0004)
    /// Notify only: the chunked-transfer channel.
    static let transfer = uuid(0x7E57_0005)

    /// 400 octets: more than MTU − 1 = 246 at the simulated bearer's largest ATT_MTU (247),
    /// less than an attribute's 512 (Vol 3 Part F 3.2.9).
    static let logValue: [UInt8] = (0..<400).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
    static let stateDescription = "Lock state"

    static var definition: GATTService {
        GATTService(uuid: service, characteristics: [
            GATTCharacteristic(uuid: state, properties: [.read, .notify], permissions: .read,
                               descriptors: [.userDescription(stateDescription)]),
            GATTCharacteristic(uuid: control, properties: [.write, .writeWithoutResponse], permissions: .write),
            GATTCharacteristic(uuid: log, properties: [.read], permissions: .read, value: logValue),
            GATTCharacteristic(uuid: transfer, properties: [.notify], permissions: []),
        ])
    }
}

/// Radio timing the tests compute their bounds from.
enum Timing {
    static let connection = ConnectionParameters.kernelDefault
    /// Apple's advertising interval for the first 30 s (Accessory Design Guidelines): its
    /// largest gap, 20 ms + 10 ms advDelay, fits in one 30 ms background scan window.
    static let fastAdvertisingInterval = Duration.milliseconds(20)
    /// advDelay is at most 10 ms (Core Vol 6 Part B 4.4.2.2.1).
    static let maximumAdvertisingDelay = Duration.milliseconds(10)
    /// From "the peer is in range" to didConnect with a 20 ms advertiser and the kernel's
    /// 60/30 ms background scan: a window may have just closed with the phone arriving in its
    /// tail, so the first window that can hear a whole advertising gap opens within one scan
    /// interval; it holds an event within advInterval + advDelay; the link comes up one
    /// connection interval after that CONNECT_IND (SimulatedAir.beginConnection, the worst
    /// transmitWindowOffset of Core Vol 6 Part B 2.3.3.1); the managers report it on the same
    /// instant. 60 + 20 + 10 + 30 = 120 ms.
    static let linkBound = connection.scanInterval + fastAdvertisingInterval + maximumAdvertisingDelay
        + connection.connectionInterval
}

enum Addresses {
    static let phone = BluetoothAddress(0x0F_0E_00_00_00_02)
    static let lock = BluetoothAddress(0xD0_0D_00_00_00_01)
    static let backDoor = BluetoothAddress(0xD0_0D_00_00_00_03)
    static let speaker = BluetoothAddress(0x5B_EA_00_00_00_04)
}

/// A lock: a simulated controller running a peripheral manager with the test service.
final class Lock {
    let controller: SimulatedController
    let manager: PeripheralManager
    let app: LockApp
    let service: LocalService
    let advertisement: Advertisement

    init(air: SimulatedAir, loop: ManualEventLoop, address: BluetoothAddress, position: Double,
         name: String = "Latchkey") throws {
        controller = air.addDevice(address: address, position: position)
        app = LockApp(loop: loop)
        app.readValues[TestGATT.state] = [0x01]  // locked
        manager = PeripheralManager(transport: controller, delegate: app,
                                    genericAccess: GenericAccess(deviceName: name, appearance: .doorLock))
        service = try manager.add(TestGATT.definition)
        advertisement = Advertisement(data: AdvertisingData(serviceUUIDs: [TestGATT.service], localName: name),
                                      interval: Timing.fastAdvertisingInterval)
        manager.startAdvertising(advertisement)
    }

    func characteristic(_ uuid: BluetoothUUID) -> LocalCharacteristic { service.characteristic(uuid)! }
    var address: BluetoothAddress { controller.address }
}

/// The phone: a simulated controller running a central manager.
final class Phone {
    let controller: SimulatedController
    let manager: CentralManager
    let app: PhoneApp

    init(air: SimulatedAir, loop: ManualEventLoop, position: Double) {
        controller = air.addDevice(address: Addresses.phone, position: position)
        app = PhoneApp(loop: loop)
        manager = CentralManager(transport: controller, delegate: app)
    }

    func peripheral(_ address: BluetoothAddress) -> Peripheral {
        manager.retrievePeripherals(withIdentifiers: [address])[0]
    }
}

struct NotLinked: Error {}

/// A phone and a lock in one simulated air, on one manual loop. Each test makes its own.
struct Home {
    let loop = ManualEventLoop()
    let air: SimulatedAir
    let lock: Lock
    let phone: Phone

    /// `configure` runs before any device exists (link capacity, MTU, range).
    init(seed: UInt64 = 1, phonePosition: Double = 1, configure: (SimulatedAir) -> Void = { _ in }) throws {
        air = SimulatedAir(loop: loop, seed: seed)
        configure(air)
        lock = try Lock(air: air, loop: loop, address: Addresses.lock, position: 0)
        phone = Phone(air: air, loop: loop, position: phonePosition)
        loop.run()  // the state updates
    }

    var central: CentralManager { phone.manager }
    var phoneApp: PhoneApp { phone.app }
    var lockApp: LockApp { lock.app }
    var lockPeripheral: Peripheral { phone.peripheral(Addresses.lock) }

    /// Connects the phone to the lock and waits for the link's setup the proxy starts on
    /// connect: the MTU exchange, and the Service Changed chores that follow it when the app
    /// asks nothing (`lockManager`, the lock's manager, then knows the phone wants the indication).
    @discardableResult
    func connected(lockManager: PeripheralManager? = nil) throws -> Peripheral {
        let p = lockPeripheral
        try central.connect(p)
        guard loop.advance(until: { phoneApp.events.contains { if case .mtu = $0 { true } else { false } } },
                           limit: .seconds(5)),
              linkSetUp(lockManager)
        else { throw NotLinked() }
        return p
    }

    /// Runs the loop until the phone's proxy has done its link's Service Changed chores,
    /// which go once the app's requests have run out: `lockManager` (the Home's own lock's
    /// by default) then knows the phone wants the indication, and its answer has reached the phone.
    @discardableResult
    func linkSetUp(_ lockManager: PeripheralManager? = nil) -> Bool {
        let manager = lockManager ?? lock.manager
        guard loop.advance(until: { manager.centrals.first?.wantsServiceChanged == true }, limit: .seconds(5)) else {
            return false
        }
        settle()
        return true
    }

    /// Connects and discovers the service, its characteristics and each one's descriptors.
    func discovered() throws -> (Peripheral, RemoteService) {
        let p = try connected()
        try discoverAll(p)
        return (p, p.service(TestGATT.service)!)
    }

    /// Discovers the test service, its characteristics and their descriptors on `p`.
    func discoverAll(_ p: Peripheral) throws {
        p.discoverServices()
        guard loop.advance(until: { p.services != nil }, limit: .seconds(5)), let s = p.service(TestGATT.service)
        else { throw NotLinked() }
        p.discoverCharacteristics(for: s)
        guard loop.advance(until: { s.characteristics != nil }, limit: .seconds(5)) else { throw NotLinked() }
        for c in s.characteristics! { p.discoverDescriptors(for: c) }
        guard loop.advance(until: { s.characteristics!.allSatisfy { $0.descriptors != nil } }, limit: .seconds(5))
        else { throw NotLinked() }
    }

    /// Settles: runs the loop long enough for every PDU in flight to cross (a few connection events).
    func settle() { loop.advance(by: Timing.connection.connectionInterval * 10) }
}

extension Duration {
    static func days(_ n: Int64) -> Duration { .seconds(n * 86_400) }
    static func hours(_ n: Int64) -> Duration { .seconds(n * 3_600) }
}
