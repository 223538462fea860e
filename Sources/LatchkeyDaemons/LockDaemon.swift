import LatchkeyAgents
import LatchkeyConfig
import LatchkeyControl
import LatchkeyEvents
import LatchkeyGPIO
import LatchkeyKernel
import LatchkeyLibgpiod
import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyManagers
import LatchkeyPosix
import LatchkeySecurity
import LatchkeySettings
import LatchkeySimAir
import LatchkeySimGPIO
import LatchkeyStore
import LatchkeyTransport
import Logging

/// What the lock agent keeps on disk, opened by the caller (the CLI opens the SQLite store).
public struct LockStores {
    public var journal: any DecisionJournal
    /// The decision recorded but never completed, if the last run died mid-way.
    public var interrupted: LockDecision?
    public var lastDecisionID: DecisionID?
    public var log: any LockEventLog
    public var keys: any KeyStore
    /// Failed-attempt counts; durable in the SQLite store (docs/SECURITY.md, "Lockout").
    public var lockout: any LockoutStore
    /// Where pairing adds keys, and the lock's identity; nil: no pairing.
    public var pairing: (registry: any KeyRegistry, identity: LockIdentity)?
    /// Where the peripheral manager preserves its state; nil: no restoration.
    public var restoration: (any RestorationStorage)?
    /// The store was found corrupt and started empty.
    public var storeWasReset: Bool
    /// Where the operating mode survives restarts; nil: it starts Normal every time.
    public var operatingModes: (any OperatingModeStore)?
    /// The SQLite store behind all of these (nil for stores of another kind): open read-only
    /// on a read-only file system (`StoreReopener` tries read-write again).
    public var store: AgentStore?
    public init(journal: any DecisionJournal, interrupted: LockDecision?, lastDecisionID: DecisionID?,
                log: any LockEventLog, keys: any KeyStore, lockout: any LockoutStore,
                pairing: (registry: any KeyRegistry, identity: LockIdentity)? = nil,
                restoration: (any RestorationStorage)? = nil, storeWasReset: Bool = false,
                operatingModes: (any OperatingModeStore)? = nil, store: AgentStore? = nil) {
        self.journal = journal; self.interrupted = interrupted; self.lastDecisionID = lastDecisionID
        self.log = log; self.keys = keys; self.lockout = lockout; self.pairing = pairing
        self.restoration = restoration; self.storeWasReset = storeWasReset; self.operatingModes = operatingModes
        self.store = store
    }
}

/// `latchkey lock`: the lock agent on the real-time loop until SIGTERM/SIGINT.
public enum LockDaemon {
    public static func run(_ settings: LockSettings, logger: Logger) throws(RuntimeError) {
        let loop = PosixEventLoop()
        let printer = EventPrinter.forAgent(format: settings.eventFormat)
        // Here, not in `start`: tests run several daemons in one process, whose threads must
        // not become real-time. Only this thread (the loop's) is: RealtimePriority.
        RealtimePriority.enter(settings.realtimePriority, printer: printer, loop: loop, logger: logger)
        let lock = try start(settings, on: loop, printer: printer, logger: logger)
        try runUntilSignalled(loop, stopping: lock.stopping)
        lock.close()
    }

    /// Everything `run` does before the loop runs: stores, transport, GPIO, the agent behind
    /// its gate (`WiredLock`, which runs on any loop), signal handlers and the control socket.
    static func start(_ settings: LockSettings, on loop: PosixEventLoop, printer: EventPrinter,
                      logger: Logger, peers: ControlPeerIdentification = .kernel,
                      ownsSignals: Bool = true) throws(RuntimeError) -> RunningAgent<LockAgent>
    {
        logger.info("lock agent starting", metadata: ["transport": "\(settings.transport)",
                                                      "state": "\(settings.stateDirectory)",
                                                      "chip": "\(settings.wiring.chipLabel)",
                                                      "actuator": "\(settings.wiring.actuator)"])
        let service = ServiceReadiness(notifier: SystemdNotifier(environment: ProcessEnvironment.current),
                                       readyEvent: EventKind.lockAdvertising.name, loop: loop, logger: logger)
        service.observe(printer)
        let stores = try StateStores.openLock(settings.stateDirectory, loop: loop,
                                              logRetention: settings.logRetention ?? StoredEventLog.defaultRetention,
                                              refusedCommits: refusedCommitLedger(settings, logger: logger), warn: { why in
            printer.emit(AgentEvent(.lockStoreWalUnprepared(why: why), time: loop.now))
            logger.warning("the store's WAL file is not laid out: commits grow it", metadata: ["why": "\(why)"])
        }) { message in
            printer.emit(AgentEvent(.lockStoreRecovered(detail: message), time: loop.now))
        }
        stores.store?.onRefusedCommit = { id, ledger, failure in
            let detail: String
            switch (ledger, failure) {
            case (let ledger?, nil): detail = "remembered in \(ledger.path)"
            case (let ledger?, let failure?): detail = "and could not be remembered in \(ledger.path): \(failure)"
            case (nil, _): detail = "and no runtime directory remembers it: a restart before a reboot may resume it"
            }
            logger.error("the card refused \(id)'s commit and the commit that supersedes it: \(detail)")
        }
        stores.store?.onCheckpointFailure = { error in
            printer.emit(AgentEvent(.lockStoreCheckpointFailed(error: error), time: loop.now))
            logger.warning("a WAL checkpoint failed; retried after the next write", metadata: ["error": "\(error)"])
        }
        try checkBridgeKey(settings, keys: stores.keys)  // before the radio is touched (WiredLock checks it too)
        let transport = try openTransport(settings.transport, loop: loop, role: "lock", logger: logger,
                                          keepsLinks: true)
        let (chips, watcher) = try openChips(settings, loop: loop, printer: printer)
        let lock = try WiredLock(settings, stores: stores, transport: transport, chips: chips, loop: loop,
                                 events: printer, logger: logger, advertisingWhileLinked: {
            (transport as? KernelTransport).map(\.advertisesWhileLinked) ?? true
        })
        if watcher == nil, case .success(let library) = LibgpiodChipFinder.loadedLibrary {
            // No watcher: the libgpiod branch of `openChips`. Which libgpiod this machine gave us (1.6
            // or 2.x, docs/ARCHITECTURE.md); the chip is open, so it loaded.
            printer.emit(AgentEvent(.lockGpioLibrary(library: library), time: loop.now))
        }
        let agent = lock.agent
        // READY: the kernel has taken the advertising, and the bolt is at rest (a fresh lock
        // drives it to locked first; the outputs are then inactive again).
        service.afterRequestsAnswered = transport.afterRequestsAnswered
        service.isSettled = { [weak agent] in
            guard let agent else { return false }
            return transport.isAdvertising && !agent.controller.machine.isMoving
        }
        // A signal's disposition is process-wide: a test process running several daemons at
        // once lets only the one that sends SIGTSTP/SIGCONT install them (`ownsSignals`).
        if ownsSignals { try lock.gates.installSignals(on: loop) }
        let keyChanges = watchKeyStore(settings.stateDirectory, agent: agent, loop: loop, logger: logger)
        lock.start()
        let (control, path) = try lock.dispatcher.serve(in: settings.stateDirectory, loop: loop, logger: logger,
                                                        peers: peers, access: settings.controlSocketAccess)
        return RunningAgent(agent: agent, gates: lock.gates, control: control, controlPath: path,
                            readiness: service, stopping: {
            logger.info("lock agent stopping")
            service.stopping()
            printer.emit(AgentEvent(.lockStopping, time: loop.now))
            agent.stop()
        }, retained: [watcher, transport, lock, keyChanges], closing: {
            // Withdraws the advertising now, not whenever the last reference goes: a stopped
            // lock must not stay connectable (docs/TESTING.md, scenario 32).
            (transport as? KernelTransport)?.close()
        })
    }

    /// The configured GPIO: the file-backed simulated chip (and its watcher, which needs the
    /// POSIX loop) when `simulated_chip_root` is set, else the real chips through libgpiod.
    static func openChips(_ settings: LockSettings, loop: PosixEventLoop,
                          printer: EventPrinter) throws(RuntimeError) -> (any GPIOChipFinder, FileChipWatcher?) {
        let reportGPIOError: (String) -> Void = { printer.emit(AgentEvent(.lockGpioError(error: $0), time: loop.now)) }
        guard let root = settings.simulatedGPIORoot else {
            return (LibgpiodChipFinder(loop: loop) { reportGPIOError("\($0)") }, nil)
        }
        // By hand, without the demo: the first start lays the chip out (inputs at rest).
        if let created = try SimulatedChipLayout.ensure(root: root, wiring: settings.wiring) {
            printer.emit(AgentEvent(.lockGpioSimCreated(chip: created), time: loop.now))
        }
        let fileChip: FileGPIOChip
        do {
            guard let c = try FileGPIOChipFinder(root: root, loop: loop).chip(labelled: settings.wiring.chipLabel)
                    as? FileGPIOChip else { throw RuntimeError("GPIO chip \(settings.wiring.chipLabel) is not file-backed") }
            fileChip = c
        } catch let e as RuntimeError { throw e } catch {
            throw RuntimeError("GPIO: \(error)")
        }
        return (GPIOChipSet([fileChip]), try FileChipWatcher(chip: fileChip, loop: loop, onError: reportGPIOError))
    }
}

extension LockDaemon {
    /// inotify on the state directory: a key revoked by another process (`latchkey keys
    /// revoke` writes the store's WAL) ends its links at once, and the lock reads no key while
    /// nothing changes. Without it (no inotify), the key watch reads the keys every second.
    static func watchKeyStore(_ directory: String, agent: LockAgent, loop: PosixEventLoop,
                              logger: Logger) -> DirectoryWatch? {
        do throws(SystemError) {
            let watch = try DirectoryWatch(directories: [directory], events: [.modify, .create, .movedTo], loop: loop) {
                [weak agent] in agent?.keyStoreMayHaveChanged()
            }
            agent.reportKeyStoreChanges()
            return watch
        } catch {
            logger.info("no inotify on \(directory) (\(error)): the lock reads its keys every second while a phone is linked")
            return nil
        }
    }

    /// Where the lock remembers unlocks whose commit the card refused (`RefusedCommitLedger`):
    /// `/run/latchkey/<state directory's name>`, the packaged unit's runtime directory, kept
    /// until a reboot (`RuntimeDirectoryPreserve=yes`), as the kernel's page cache is. Nil,
    /// said once, where that directory is not there (a run by hand): none is made for it.
    static func refusedCommitLedger(_ settings: LockSettings, logger: Logger) -> RefusedCommitLedger? {
        let directory = ControlSocketPath.directory(of: ControlSocketPath.readOnlyFallback(settings.stateDirectory))
        guard RuntimeDirectory.isOnReadOnlyFileSystem(directory) == false else {
            let why = "no runtime directory \(directory) for refused commits: a lock restarted before a reboot "
                + "may resume an unlock whose commit a card gone read-only refused"
            logger.info("\(why)")
            return nil
        }
        return RefusedCommitLedger(directory: directory)
    }

    /// A `bridge_key_id` that names a key unfit for the bridge stops the start (exit 78, at the
    /// field's file and line): the bridge would otherwise run refused at every command, or act
    /// with more than a household member's rights.
    static func checkBridgeKey(_ settings: LockSettings, keys: any KeyStore) throws(RuntimeError) {
        guard let id = settings.bridgeKeyID, let problem = BridgeKeyRule.problem(keys.key(id: id)) else { return }
        var error = settings.bridgeKeySite ?? ConfigError(file: "lock.yaml", line: nil, field: "bridge_key_id", message: "")
        error.message = "key \(id) \(problem)"
        throw RuntimeError.configuration("\(error)")
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
/// `keepsLinks`: an agent's links are kept in systemd's descriptor store where that is safe
/// (`LinkKeeping`), and the links it hands back adopted.
func openTransport(_ settings: TransportSettings, loop: PosixEventLoop, role: String, logger: Logger,
                   keepsLinks: Bool = false) throws(RuntimeError) -> any BluetoothTransport
{
    switch settings {
    case .sim(let socket, let address, let position):
        do {
            return try RemoteTransport(socketPath: socket, address: address, position: position, loop: loop)
        } catch {
            throw RuntimeError("cannot reach the simulated air at \(socket) (\(error)); start it with `latchkey air`")
        }
    case .kernel(let adapter):
        do {
            let store = keepsLinks ? LinkKeeping.openStore(logger: logger) : nil
            // Failures while adopting kept links come before `onFailure` can be set: logged after.
            let transport = try KernelTransport.open(adapter: adapter, loop: loop, descriptorStore: store)
            transport.onFailure = { logger.warning("kernel transport: \($0)") }
            for failure in transport.adoptionFailures { logger.warning("kernel transport: \(failure)") }
            if !transport.adoptedLinks.isEmpty {
                logger.notice("adopted links the service manager kept", metadata: [
                    "links": "\(transport.adoptedLinks.map(\.description).joined(separator: ", "))"])
            }
            transport.mgmt.trace = { direction, packet in logger.trace("mgmt \(direction) \(packet.index) \(hex(packet.encoded()))") }
            return transport
        } catch where error.code == .noBluetooth {
            throw RuntimeError("this kernel has no Bluetooth support (\(error.message)); use `transport: sim` "
                               + "with `latchkey air` on this machine, or run on a kernel with Bluetooth")
        } catch {
            throw RuntimeError("cannot open Bluetooth adapter \(adapter): \(error)")
        }
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
package func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
}
