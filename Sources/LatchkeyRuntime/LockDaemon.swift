import LatchkeyAgents
import Logging
import LatchkeyLock
import LatchkeyManagers
import LatchkeyPosix
import LatchkeySecurity
import LatchkeySimAir
import LatchkeyTransport

/// What the lock agent keeps on disk, opened by the caller (the CLI opens the SQLite store).
public struct LockStores {
    public var journal: any DecisionJournal
    /// The decision recorded but never completed, if the last run died mid-way.
    public var interrupted: LockDecision?
    public var lastDecisionID: DecisionID?
    public var log: any LockEventLog
    public var keys: any KeyStore
    /// Where the peripheral manager preserves its state (M6); nil: no restoration.
    public var restoration: (any RestorationStorage)?
    /// The store was found corrupt and started empty.
    public var storeWasReset: Bool
    public init(journal: any DecisionJournal, interrupted: LockDecision?, lastDecisionID: DecisionID?,
                log: any LockEventLog, keys: any KeyStore, restoration: (any RestorationStorage)? = nil,
                storeWasReset: Bool = false) {
        self.journal = journal; self.interrupted = interrupted; self.lastDecisionID = lastDecisionID
        self.log = log; self.keys = keys; self.restoration = restoration; self.storeWasReset = storeWasReset
    }
}

/// `latchkey lock`: the lock agent on the real-time loop until SIGTERM/SIGINT.
public enum LockDaemon {
    public static func run(_ settings: LockSettings, logger: Logger) throws(RuntimeError) {
        let loop = PosixEventLoop()
        logger.info("lock agent starting", metadata: ["transport": "\(settings.transport)",
                                                      "state": "\(settings.stateDirectory)",
                                                      "chip": "\(settings.wiring.chipLabel)",
                                                      "actuator": "\(settings.wiring.actuator)"])
        let printer = EventPrinter(format: settings.eventFormat)
        let stores = try StateStores.openLock(settings.stateDirectory, loop: loop) { message in
            printer.emit(AgentEvent("lock.store_recovered", time: loop.now, [("detail", message)]))
        }
        let transport = try openTransport(settings.transport, loop: loop, role: "lock")

        // GPIO: the file-backed simulated chip (the libgpiod backend arrives with the kernel transport).
        guard let root = settings.simulatedGPIORoot else {
            throw RuntimeError("no GPIO backend for real hardware in this build yet; set gpio.simulated_chip_root")
        }
        let fileChip: FileGPIOChip
        do {
            guard let c = try FileGPIOChipFinder(root: root, loop: loop).chip(labelled: settings.wiring.chipLabel)
                    as? FileGPIOChip else { throw RuntimeError("GPIO chip \(settings.wiring.chipLabel) is not file-backed") }
            fileChip = c
        } catch let e as RuntimeError { throw e } catch {
            throw RuntimeError("GPIO: \(error)")
        }
        let outputClock = OutputChangeClock(loop: loop)
        let hardware: LockHardware
        do {
            hardware = try LockHardware.open(settings.wiring, chips: TimingChipFinder(GPIOChipSet([fileChip]),
                                                                                    clock: outputClock), loop: loop)
        } catch { throw RuntimeError("GPIO: \(error)") }
        let watcher = try FileChipWatcher(chip: fileChip, loop: loop) { printer.emit(AgentEvent("lock.gpio_error", time: loop.now, [("error", $0)])) }

        let controller: LockController
        do {
            controller = try LockController(loop: loop, behaviour: settings.behaviour, hardware: hardware,
                                            journal: stores.journal,
                                            firstDecisionID: DecisionID((stores.lastDecisionID?.rawValue ?? 0) + 1))
        } catch { throw RuntimeError("lock configuration: \(error)") }
        let agent = LockAgent(transport: transport, controller: controller, keys: stores.keys, log: stores.log,
                              events: printer, configuration: settings.agent, outputClock: outputClock,
                              restoration: stores.restoration)
        agent.peripheral.trace = { peer, direction, pdu in
            logger.trace("ATT \(direction) \(peer): \(hex(pdu))")
        }
        if let storage = stores.restoration {
            // M6 step 2: the managers that had work pending are handed back (here: ours, or none).
            let pending = RestorationRegistry(storage: storage).identifiersWithPendingWork(.peripheral)
            logger.info("relaunch", metadata: ["restoring": "\(pending)"])
        }
        if let recovered = stores.interrupted {
            logger.notice("resuming after an interrupted decision", metadata: ["decision": "\(recovered.id)",
                                                                              "operation": "\(recovered.operation)"])
        }
        agent.start(from: stores)

        try runUntilSignalled(loop) {
            logger.info("lock agent stopping")
            printer.emit(AgentEvent("lock.stopping", time: loop.now))
            agent.stop()
        }
        withExtendedLifetime((agent, watcher, transport)) {}
    }
}

extension LockAgent {
    /// Starts the lock on what its store holds: a store found corrupt (and started empty)
    /// is a LockFactoryReset alarm in the fresh log; then the sensors are read and the
    /// interrupted decision, if any, is reconciled (each recovery is an event in the log).
    public func start(from stores: LockStores) {
        if stores.storeWasReset { logAlarm(.lockFactoryReset) }
        start(recovered: stores.interrupted)
    }
}

/// Opens the configured transport, with one clear sentence when it cannot.
func openTransport(_ settings: TransportSettings, loop: PosixEventLoop, role: String) throws(RuntimeError)
    -> any BluetoothTransport
{
    switch settings {
    case .sim(let socket, let address, let position):
        do {
            return try RemoteTransport(socketPath: socket, address: address, position: position, loop: loop)
        } catch {
            throw RuntimeError("cannot reach the simulated air at \(socket) (\(error)); start it with `latchkey air`")
        }
    case .kernel(let adapter):
        throw RuntimeError("the kernel Bluetooth transport (\(adapter)) is not part of this build yet; "
                           + "use `transport: sim` with `latchkey air`")
    }
}

/// Runs the loop until SIGTERM or SIGINT, then calls `stopping` and returns.
func runUntilSignalled(_ loop: PosixEventLoop, stopping: @escaping () -> Void) throws(RuntimeError) {
    do {
        let term = try loop.onSignal(.terminate) { stopping(); loop.stop() }
        let int = try loop.onSignal(.interrupt) { stopping(); loop.stop() }
        try loop.run()
        term.cancel(); int.cancel()
    } catch {
        throw RuntimeError("event loop: \(error)")
    }
}

/// Octets as lowercase hex, for `.trace` PDU logs.
func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
}
