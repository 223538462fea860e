import Foundation
import LatchkeyAgents
import LatchkeyEvents
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyPhoneAgent
import LatchkeySecurity
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyStore
import LatchkeyTestKit
import LatchkeyTransport
import LatchkeyPosix

/// A lock agent and a phone agent as the daemons build them — SQLite stores in their state
/// directories (`StateStores`), restoration on — over an in-process simulated air, on one
/// manual loop. The lock drives a motor without bolt sensors (2 s per movement unless told; or
/// another actuator) on a simulated chip. A process's death is its controller's `detachApplication()`; the
/// "system" (the air's controllers) keeps its pending list and links, the disk its stores.
final class Household {
    static let lockAddress = BluetoothAddress(0xC0FFEE000001)
    static let phoneAddress = BluetoothAddress(0xC0FFEE000002)
    static let motorRun = Duration.seconds(2)
    let motorRun: Duration
    let loop = ManualEventLoop()
    private(set) var air: SimulatedAir
    let directory: String
    let key = PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .admin,
                       mayRequestArrivalUnlock: true)
    /// Wall time follows the manual clock, so that the stores see the time that passes.
    let wallClock: WallClock
    private(set) var chip: SimulatedGPIOChip
    private(set) var lock: LockAgent?
    private(set) var phone: PhoneAgent?
    private var lockStores: LockStores?
    let lockEvents = RecordingEventSink()
    let phoneEvents = RecordingEventSink()
    /// The PDUs the current phone process sent.
    private(set) var phoneSent = SentPDUs()
    /// Set before `startLock`: the lock's stores pass through it (FaultyStore), and the agent
    /// gets its lockout store from them (else lockout is in memory).
    var wrapLockStores: ((LockStores) -> LockStores)?
    /// The lock's state directory answers as a card gone read-only (EROFS on opening for
    /// writing) while this is set (`StoreFileSystem.readOnly`).
    var readOnlyCard = false
    /// Tries a read-only store read-write again, as `LockDaemon` does.
    private(set) var reopener: StoreReopener?

    var lockState: String { directory + "/lock" }
    var phoneState: String { directory + "/phone" }

    /// The lock's actuator: a motor of `motorRun` unless a test asks for another (`.hold`:
    /// fail-secure, at rest locked, as the HIL's rig).
    let actuator: ActuatorKind

    init(phoneAt position: Double = 1, motorRun: Duration = Household.motorRun, actuator: ActuatorKind? = nil) throws {
        self.motorRun = motorRun
        self.actuator = actuator ?? .motor(runTime: motorRun)
        directory = try! RuntimeDirectory.makeTemporary(prefix: "latchkey-household")
        let loop = loop
        wallClock = WallClock { 1_750_000_000_000_000_000 + loop.now.nanoseconds }
        air = SimulatedAir(loop: loop, seed: 11)
        chip = Self.newChip(loop)
        Self.placeDevices(in: air, phoneAt: position)
        try StateStores.openKeys(lockState).add(key)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    private static func newChip(_ loop: ManualEventLoop) -> SimulatedGPIOChip {
        SimulatedGPIOChip(label: "door", lineNames: ["UNLOCK", "LOCK"], loop: loop)
    }

    private static func placeDevices(in air: SimulatedAir, phoneAt position: Double) {
        _ = air.addDevice(address: lockAddress, position: 0)
        _ = air.addDevice(address: phoneAddress, position: position)
    }

    // MARK: Processes

    /// Starts the lock agent as `LockDaemon` does: stores, hardware (outputs inactive), the
    /// agent with its restoration storage, then `start(from:)`.
    func startLock() throws {
        var stores = try StateStores.openLock(lockState, loop: loop, wallClock: wallClock,
                                              fileSystem: .readOnly(while: { [unowned self] in self.readOnlyCard }))
        if let wrapLockStores { stores = wrapLockStores(stores) }
        var wiring = LockWiring(chipLabel: "door", actuator: actuator, unlockOutput: .init("UNLOCK"))
        if case .motor = actuator { wiring.lockOutput = .init("LOCK") }
        let hardware = try LockHardware.open(wiring, chips: GPIOChipSet([chip]), loop: loop)
        var behaviour = LockBehaviour()
        behaviour.autoRelockTime = nil
        let controller = try LockController(loop: loop, behaviour: behaviour, hardware: hardware, journal: stores.journal,
                                            firstDecisionID: DecisionID((stores.lastDecisionID?.rawValue ?? 0) + 1))
        let agent = LockAgent(transport: air.device(Self.lockAddress)!, controller: controller, keys: stores.keys,
                              log: stores.log, events: lockEvents,
                              configuration: LockAgentConfiguration(departureGrace: .seconds(5)),
                              lockout: wrapLockStores == nil ? InMemoryLockoutStore() : stores.lockout,
                              restoration: stores.restoration)
        reopener = StoreReopener(store: stores.store, agent: agent, loop: loop)
        agent.start(from: stores)
        lock = agent
        lockStores = stores
    }

    func startPhone() throws {
        let (state, restoration) = try StateStores.openPhone(phoneState, wallClock: wallClock)
        let agent = try PhoneAgent(transport: air.device(Self.phoneAddress)!,
                                   configuration: PhoneAgentConfiguration(lockAddress: Self.lockAddress, keyID: key.id,
                                                                          secret: key.secret, gracePeriod: .seconds(5)),
                                   store: state, events: phoneEvents, restoration: restoration)
        let sent = SentPDUs()
        agent.central.trace = { _, direction, pdu in sent.record(direction, pdu) }
        phoneSent = sent
        phone = agent
    }

    /// SIGKILL (or a crash): no cleanup. The GPIO lines revert with the process.
    func killLock() {
        air.device(Self.lockAddress)!.detachApplication()
        lock = nil
        reopener = nil
        lockStores = nil
        chip = Self.newChip(loop)
    }

    func killPhone() {
        air.device(Self.phoneAddress)!.detachApplication()
        phone = nil
    }

    /// `systemctl stop`: SIGTERM, the agent's `stop()`, then the process ends.
    func stopLock() {
        lock?.stop()
        killLock()
    }

    func stopPhone() {
        phone?.stop()
        killPhone()
    }

    /// Both processes die and the kernel's state goes with the reboot: a new air (no
    /// pending lists, no links); the state directories survive.
    func reboot(downFor downtime: Duration) {
        killLock()
        killPhone()
        loop.advance(by: downtime)
        air = SimulatedAir(loop: loop, seed: 12)
        Self.placeDevices(in: air, phoneAt: 1)
    }

    // MARK: Looking

    var unlockDriven: Bool { chip.isHigh("UNLOCK") }
    var lockDriven: Bool { chip.isHigh("LOCK") }
    var phoneController: SimulatedController { air.device(Self.phoneAddress)! }
    var lockController: SimulatedController { air.device(Self.lockAddress)! }

    func count(_ name: String, in sink: RecordingEventSink) -> Int { sink.names().count { $0 == name } }

    /// The lock's audit log as another process reads it from the file.
    func log() throws -> [LockEvent] {
        try StateStores.openEventLog(lockState).read(limit: 1000).map(\.event)
    }

    @discardableResult
    func advance(until condition: () -> Bool, limit: Duration = .seconds(10)) -> Bool {
        loop.advance(until: condition, limit: limit)
    }

    /// Both agents up, the phone linked and ready, the lock locked (its first start drives a
    /// motor of unknown position to locked).
    func settle() throws {
        try startLock()
        try startPhone()
        let ready = advance(until: { self.count(EventKind.phoneGattReady.name, in: self.phoneEvents) > 0
                                     && self.lock?.controller.lockState == .locked })
        if !ready { throw RuntimeError("the household did not settle: \(phoneEvents.names())") }
        loop.advance(by: .milliseconds(200))  // the phone's `present` command
    }

    /// Runs `operation` from the phone and waits for its answer.
    func command(_ operation: LockOperation) -> Result<Void, PhoneAgent.CommandError>? {
        var result: Result<Void, PhoneAgent.CommandError>?
        phone?.perform(operation) { result = $0 }
        advance(until: { result != nil })
        return result
    }
}

extension ConnectionParameters {
    /// A foreground phone's auto-connect timing: the kernel's default scan, with the
    /// connection interval the phone asks for.
    static var phoneForeground: ConnectionParameters {
        var p = ConnectionParameters.kernelDefault
        p.connectionInterval = PhoneAgentConfiguration.defaultConnectionInterval ?? p.connectionInterval
        return p
    }
}
