import LatchkeyAgents
import LatchkeyEvents
import LatchkeyGATT
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPhone
import LatchkeyPhoneAgent
import LatchkeySecurity
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTestKit
import LatchkeyTransport

/// A lock agent and a phone agent on one in-process simulated air, with a simulated GPIO
/// chip wired as: actuator "latch" (hold, active-high; for a motor, its unlock direction,
/// with "bolt" its lock direction), door sensor "door" (active = open).
final class AgentWorld {
    let loop = ManualEventLoop()
    /// The lock's air.
    let air: SimulatedAir
    /// The phone's: the lock's own, or, with a relay, another place joined to it only by
    /// the relay (`RelayAttacker`: its phone side at 0 there, its door side at 1 here).
    let phoneAir: SimulatedAir
    private(set) var relay: RelayAttacker?
    static let relayDoorAddress = BluetoothAddress(0xBADBAD000001)
    let lockAddress = BluetoothAddress(0xC0FFEE000001)
    let phoneAddress = BluetoothAddress(0xC0FFEE000002)
    private(set) var chip: SimulatedGPIOChip
    let journal = InMemoryDecisionJournal()
    let lockLog = InMemoryLockEventLog()
    let lockEvents = RecordingEventSink()
    let phoneEvents = RecordingEventSink()
    let keys: InMemoryKeyStore
    let key: PhoneKey
    let phoneStore = InMemoryPhoneStateStore()
    let lockouts = InMemoryLockoutStore()
    let identity = try! LockIdentity(rawPrivateKey: LockIdentity.newRawPrivateKey())
    /// What the managers preserve, kept across the agents' deaths like the store is.
    let phoneRestoration = InMemoryRestorationStorage()
    let lockRestoration = InMemoryRestorationStorage()
    /// The lock's operating mode across its restarts.
    let operatingModes = InMemoryOperatingModeStore()
    /// Counters and decisions through one store over `keys` and `journal` (`CommitRecorder`).
    private(set) var durables: (any KeyStore & DecisionJournal)?
    let actuator: ActuatorKind
    var lock: LockAgent!
    var phone: PhoneAgent!
    /// The lock's configured name for its next start.
    var lockName = "Latchkey"
    let behaviour: LockBehaviour
    /// The lock's `unauthenticatedLinkTimeout` at its next start.
    var unauthenticatedLinkTimeout = LockAgentConfiguration.defaultUnauthenticatedLinkTimeout
    /// The lock's `maximumLinks`.
    let maximumLinks: Int
    /// The phone's `idleConnectionInterval` (nil: it keeps its fast one while linked).
    let phoneIdleInterval: Duration?

    static let lineNames = ["latch", "bolt", "door", "button"]

    /// A phone that starts out of range has just left: it starts beside the lock, tells the lock
    /// it is there (`present`) and walks out, so that the lock sees its departure — the lock
    /// accepts an arrival only after one it saw (`lockSawItLeave: false` skips that).
    init(autoRelock: Duration? = .seconds(30), grace: Duration = .seconds(5), phoneStartsAt position: Double = 100,
         lockSawItLeave: Bool = true, relayed: Bool = false, actuator: ActuatorKind = .hold, maximumLinks: Int = 4,
         phoneIdleInterval: Duration? = nil,
         durables: ((InMemoryKeyStore, InMemoryDecisionJournal) -> any KeyStore & DecisionJournal)? = nil) throws {
        air = SimulatedAir(loop: loop, seed: 7)
        phoneAir = relayed ? SimulatedAir(loop: loop, seed: 8) : air
        chip = SimulatedGPIOChip(label: "sim-lock", lineNames: Self.lineNames, loop: loop)
        self.actuator = actuator
        self.maximumLinks = maximumLinks
        self.phoneIdleInterval = phoneIdleInterval
        key = PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .admin,
                       mayRequestArrivalUnlock: true)
        keys = InMemoryKeyStore([key])
        var b = LockBehaviour()
        b.autoRelockTime = autoRelock
        behaviour = b
        self.durables = durables?(keys, journal)
        let leaves = lockSawItLeave && position > air.range
        _ = air.addDevice(address: lockAddress, position: 0)
        _ = phoneAir.addDevice(address: phoneAddress, position: leaves ? 2 : position)
        if relayed {
            // Until a test says otherwise it carries PDUs at once, at the kernel's interval:
            // the owner at home, as if beside the lock.
            relay = try RelayAttacker(phoneAir: phoneAir, doorAir: air, lockAddress: lockAddress,
                                      doorAddress: Self.relayDoorAddress, phoneSidePosition: 0, doorSidePosition: 1,
                                      advertisement: Advertisement(data: AdvertisingData(
                                          serviceUUIDs: [LockServiceUUID.service], localName: "Latchkey"),
                                                                   interval: .milliseconds(20)),
                                      latency: .zero, doorInterval: ConnectionParameters.kernelDefault.connectionInterval)
        }
        try startLock()
        try startPhone(grace: grace)
        if leaves {
            // The phone's own proof too: a sealed reply opened, so it counts itself home first.
            precondition(advance(until: { lockEvents.names().contains(EventKind.lockPhonePresent.name)
                && phoneEvents.names().contains(EventKind.phoneLinkVerified.name) }, limit: .seconds(5)))
            walkPhone(to: position)
        }
    }

    /// The owner comes home: the phone's arrival intent (a geofence), then the walk into range.
    func comeHome(to position: Double = 2) {
        phone.arrivalIntent()
        walkPhone(to: position)
    }

    func startLock(recovered: LockDecision? = nil, serviceDefinition: GATTService = LockServiceDefinition.service) throws {
        var motorLine: LockWiring.Output?
        if case .motor = actuator { motorLine = .init("bolt") }
        let wiring = LockWiring(chipLabel: "sim-lock", actuator: actuator, unlockOutput: .init("latch"),
                                lockOutput: motorLine, door: .init("door"), button: .init("button"))
        let hardware = try LockHardware.open(wiring, chips: GPIOChipSet([chip]), loop: loop)
        let controller = try LockController(loop: loop, behaviour: behaviour, hardware: hardware,
                                            journal: durables ?? journal,
                                            firstDecisionID: DecisionID((journal.lastDecisionID?.rawValue ?? 0) + 1))
        lock = LockAgent(transport: air.device(lockAddress)!, controller: controller, keys: durables ?? keys,
                         log: lockLog, events: lockEvents,
                         configuration: LockAgentConfiguration(name: lockName, departureGrace: .seconds(5),
                                                               serviceDefinition: serviceDefinition,
                                                               unauthenticatedLinkTimeout: unauthenticatedLinkTimeout,
                                                               maximumLinks: maximumLinks),
                         lockout: lockouts,
                         pairing: PairingResponder(identity: identity, registry: keys, loop: loop),
                         restoration: lockRestoration, operatingModes: operatingModes)
        lock.start(recovered: recovered)
    }

    func startPhone(grace: Duration) throws {
        phone = try PhoneAgent(transport: phoneAir.device(phoneAddress)!,
                               configuration: PhoneAgentConfiguration(lockAddress: lockAddress, keyID: key.id,
                                                                      secret: key.secret, gracePeriod: grace,
                                                                      idleConnectionInterval: phoneIdleInterval),
                               store: phoneStore, events: phoneEvents, restoration: phoneRestoration)
    }

    /// SIGKILL of the phone agent: its controller keeps the pending list and the links.
    func killPhone() {
        phoneAir.device(phoneAddress)!.detachApplication()
        phone = nil
    }

    /// SIGKILL of the lock agent: its controller keeps the links for a while; the lines
    /// revert with the process (the next life gets a fresh chip).
    func killLock() {
        air.device(lockAddress)!.detachApplication()
        lock = nil
    }

    /// The lock agent's relaunch: the journal hands back the interrupted decision.
    /// `serviceDefinition`: the relaunched version's service.
    func restartLock(serviceDefinition: GATTService = LockServiceDefinition.service) throws {
        chip = SimulatedGPIOChip(label: "sim-lock", lineNames: Self.lineNames, loop: loop)
        try startLock(recovered: journal.interrupted, serviceDefinition: serviceDefinition)
    }

    var latchEnergised: Bool { chip.isHigh("latch") }

    /// Runs until the phone's proxy has done its link's Service Changed chores (they follow
    /// the agent's own requests): the lock knows the phone wants the indication, and the
    /// answer has reached the phone.
    @discardableResult
    func linkSetUp() -> Bool {
        guard advance(until: { lock.peripheral.centrals.first?.wantsServiceChanged == true }, limit: .seconds(5)) else {
            return false
        }
        // The CCCD's Write Response crosses at a following connection event (the kernel's
        // default interval, which the agents keep); three leave room for the phone to take it.
        loop.advance(by: ConnectionParameters.kernelDefault.connectionInterval * 3)
        return true
    }

    func walkPhone(to position: Double) { phoneAir.setPosition(position, of: phoneAddress) }

    @discardableResult
    func advance(until condition: () -> Bool, limit: Duration = .seconds(10)) -> Bool {
        loop.advance(until: condition, limit: limit)
    }
}
