import LatchkeyAgents
import LatchkeyCentral
import LatchkeyControl
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeyPhone
import LatchkeyPhoneAgent
import LatchkeySecurity
import LatchkeySettings
import LatchkeyStore
import LatchkeyTransport
import Logging

/// The lock daemon's agent as `LockDaemon` wires it, on any event loop: the bridge key
/// checked, the hardware on `chips`, the controller on the journal, the agent behind its
/// gate, the store's read-write retry, and the commands its control socket answers.
/// What only a real process has — the transport it opens, the file chip's watcher, signals,
/// the control socket, sd_notify — is `LockDaemon`'s; a test passes a simulated air's
/// device and chip and runs this on a manual loop.
public final class WiredLock {
    public let agent: LockAgent
    let stores: LockStores
    let gates: AgentGates
    /// Everything the control socket answers; callable in-process (`handle`).
    package let dispatcher: ControlDispatcher
    /// What `latchkey mqtt` asks of the lock, kept with it.
    private let bridge: BridgeControlCommands
    private let reopener: StoreReopener?

    /// `advertisingWhileLinked`: what `status` says of the controller (the kernel learns it
    /// when a central first links; the simulated radios always do).
    package init(_ settings: LockSettings, stores: LockStores, transport: any BluetoothTransport,
                 chips: any GPIOChipFinder, loop: any EventLoop, events: any AgentEventSink, logger: Logger,
                 advertisingWhileLinked: @escaping () -> Bool? = { true }) throws(RuntimeError) {
        try LockDaemon.checkBridgeKey(settings, keys: stores.keys)
        let outputClock = OutputChangeClock(loop: loop)
        let hardware: LockHardware
        do {
            hardware = try LockHardware.open(settings.wiring, chips: TimingChipFinder(chips, clock: outputClock), loop: loop)
        } catch { throw RuntimeError("GPIO: \(error)") }
        let controller: LockController
        do {
            controller = try LockController(loop: loop, behaviour: settings.behaviour, hardware: hardware,
                                            journal: stores.journal,
                                            firstDecisionID: DecisionID((stores.lastDecisionID?.rawValue ?? 0) + 1))
        } catch { throw RuntimeError.configuration("lock configuration: \(error)") }
        let pairing = stores.pairing.map {
            PairingResponder(identity: $0.identity, registry: $0.registry, loop: loop, random: settings.agent.random)
        }
        let agent = LockAgent(transport: transport, controller: controller, keys: stores.keys, log: stores.log,
                              events: events, configuration: settings.agent, outputClock: outputClock,
                              lockout: stores.lockout, pairing: pairing, restoration: stores.restoration,
                              operatingModes: stores.operatingModes)
        // A store open read-only (the card is): the lock runs degraded and tries read-write again.
        reopener = StoreReopener(store: stores.store, agent: agent, loop: loop)
        agent.peripheral.trace = { peer, direction, pdu in
            logger.trace("ATT \(direction) \(peer): \(hex(pdu))")
        }
        if let storage = stores.restoration {
            // Restoration, step 2: the managers that had work pending are handed back (here: ours, or none).
            let pending = RestorationRegistry(storage: storage).identifiersWithPendingWork(PeripheralRestorationState.self)
            logger.info("relaunch", metadata: ["restoring": "\(pending)"])
        }
        if let recovered = stores.interrupted {
            logger.notice("resuming after an interrupted decision", metadata: ["decision": "\(recovered.id)",
                                                                              "operation": "\(recovered.operation)"])
        }
        gates = AgentGates.lock(agent, settings: settings.execution, loop: loop, events: events, logger: logger)
        // One dispatcher: status, suspend/resume/execution (the application gate), what
        // `latchkey pair` sends (docs/SECURITY.md, "Pairing"), and what `latchkey mqtt` asks
        // for (BridgeControlCommands: the audit log by cursor, commands as its key).
        let lockCommands = LockControlCommands.dispatcher(agent, application: gates.control,
                                                          advertisingWhileLinked: advertisingWhileLinked,
                                                          store: stores.store)
        let bridge = BridgeControlCommands(agent: agent, bridgeKey: settings.bridgeKeyID, read: { from, limit in
            guard let log = (stores.log as? StoredLockRecords)?.log else {
                throw RuntimeError("this lock's audit log is not the stored one (no wall-clock times to send)")
            }
            return try log.read(from: from, limit: limit)
        })
        var dispatcher = ControlDispatcher(
            application: lockCommands.application, agentStatus: lockCommands.agentStatus,
            agentCommands: { lockCommands.agentCommands($0, $1) || bridge.handle($0, reply: $1) },
            agentUsage: lockCommands.agentUsage + ", " + BridgeControlCommands.usage)
        dispatcher.peerCommands = BridgeControlCommands.peerCommands
        dispatcher.onPeerRefused = ControlPeer.refusalEvent(.lock, printer: events, loop: loop)
        self.agent = agent; self.stores = stores; self.bridge = bridge; self.dispatcher = dispatcher
    }

    /// Starts the agent on what its stores hold (`LockAgent.start(from:)`).
    public func start() { agent.start(from: stores) }
}

/// The phone daemon's agent as `PhoneDaemon` wires it, on any event loop: the agent on its
/// key and stores, behind its gate, and the commands its control socket answers. The
/// transport, signals, the control socket and sd_notify are `PhoneDaemon`'s.
public final class WiredPhone {
    public let agent: PhoneAgent
    let gates: AgentGates
    /// Everything the control socket answers; callable in-process (`handle`).
    package let dispatcher: ControlDispatcher

    /// `random`: the agent's (`PhoneAgentConfiguration.random`); the daemon keeps the system's.
    package init(_ settings: PhoneSettings, key: PhoneDaemon.Key, store: any PhoneStateStore,
                 restoration: any RestorationStorage, transport: any BluetoothTransport, loop: any EventLoop,
                 events: any AgentEventSink, logger: Logger, random: RandomSource = .system) throws(RuntimeError) {
        logger.info("relaunch", metadata: [
            "restoring": "\(RestorationRegistry(storage: restoration).identifiersWithPendingWork(CentralRestorationState.self))"])
        let agent: PhoneAgent
        var configuration = PhoneAgentConfiguration(lockAddress: key.lock, keyID: key.id, secret: key.secret,
                                                    gracePeriod: settings.gracePeriod,
                                                    connectOptions: settings.connectOptions,
                                                    arrivalIntentWindow: settings.arrivalIntentWindow,
                                                    nearbyLimit: settings.nearbyLimit,
                                                    connectionInterval: settings.connectionInterval,
                                                    idleConnectionInterval: settings.idleConnectionInterval)
        configuration.random = random
        do {
            agent = try PhoneAgent(transport: transport, configuration: configuration,
                                   store: store, events: events, restoration: restoration)
        } catch { throw RuntimeError("phone state in \(settings.stateDirectory): \(error)") }
        agent.central.trace = { peer, direction, pdu in logger.trace("ATT \(direction) \(peer): \(hex(pdu))") }
        gates = try AgentGates.phone(agent, lock: key.lock, settings: settings.execution, loop: loop,
                                     events: events, logger: logger)
        var dispatcher = PhoneControlCommands.dispatcher(agent, application: gates.control)
        dispatcher.peerCommands = PhoneControlCommands.peerCommands
        dispatcher.onPeerRefused = ControlPeer.refusalEvent(.phone, printer: events, loop: loop)
        self.agent = agent; self.dispatcher = dispatcher
    }
}
