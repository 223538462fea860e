#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import LatchkeyEvents
import LatchkeyPhoneAgent
import Logging
import LatchkeyControl
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPosix
import LatchkeySettings
import LatchkeyTransport

/// `latchkey phone`: the phone agent on the real-time loop until SIGTERM/SIGINT, with a
/// local control socket for scripted commands (ControlDispatcher, PhoneControlCommands).
public enum PhoneDaemon {
    public static func run(_ settings: PhoneSettings, logger: Logger) throws(RuntimeError) {
        let loop = PosixEventLoop()
        let phone = try start(settings, on: loop, printer: .forAgent(format: settings.eventFormat), logger: logger)
        try runUntilSignalled(loop, stopping: phone.stopping)
        phone.close()
    }

    /// The key the phone acts with and the lock it goes to.
    package struct Key {
        package var id: UInt32
        package var secret: [UInt8]
        package var lock: BluetoothAddress
    }

    /// The configured key: `key_id` with its key file, or the file `latchkey phone pair`
    /// wrote. A missing, unreadable or malformed key, or no lock to go to, is a configuration
    /// error (exit 78): no restart can fix it, and the unit's RestartPreventExitStatus=78 then
    /// stops systemd from running an unpaired phone into its start limit.
    package static func key(_ settings: PhoneSettings) throws(RuntimeError) -> Key {
        let keyID: UInt32, secret: [UInt8], pairedLock: BluetoothAddress?
        do {
            if let id = settings.keyID {
                (keyID, secret, pairedLock) = (id, try readSecret(settings.keySecretFile), nil)
            } else {
                (keyID, secret, pairedLock) = try PairedKeyFile.read(settings.keySecretFile)
            }
        } catch {
            throw RuntimeError.configuration(fileExists(settings.keySecretFile)
                                             ? error.description : PairedKeyFile.missingAdvice(settings.keySecretFile))
        }
        // The configuration's address wins; else the one `latchkey phone pair` found by its scan.
        guard let lockAddress = settings.lockAddress ?? pairedLock else {
            throw RuntimeError.configuration("no lock_address in the configuration, nor in \(settings.keySecretFile); "
                                             + "run `latchkey phone pair` (it finds the lock) or set lock_address")
        }
        return Key(id: keyID, secret: secret, lock: lockAddress)
    }

    /// Everything `run` does before the loop runs: key, stores, transport, the agent behind
    /// its gate (`WiredPhone`, which runs on any loop), signal handlers and the control socket.
    static func start(_ settings: PhoneSettings, on loop: PosixEventLoop, printer: EventPrinter,
                      logger: Logger, peers: ControlPeerIdentification = .kernel,
                      ownsSignals: Bool = true) throws(RuntimeError) -> RunningAgent<PhoneAgent>
    {
        let key = try key(settings)
        logger.info("phone agent starting", metadata: ["transport": "\(settings.transport)",
                                                       "lock": "\(key.lock)",
                                                       "state": "\(settings.stateDirectory)"])
        let service = ServiceReadiness(notifier: SystemdNotifier(environment: ProcessEnvironment.current),
                                       readyEvent: EventKind.phoneConnectPending.name, loop: loop, logger: logger)
        service.observe(printer)
        let (store, restoration) = try StateStores.openPhone(settings.stateDirectory, warn: { why in
            printer.emit(AgentEvent(.phoneStoreWalUnprepared(why: why), time: loop.now))
            logger.warning("the store's WAL file is not laid out: commits grow it", metadata: ["why": "\(why)"])
        }) { message in
            printer.emit(AgentEvent(.phoneStoreRecovered(detail: message), time: loop.now))
        }
        let transport = try openTransport(settings.transport, loop: loop, role: "phone", logger: logger,
                                          keepsLinks: true)
        let phone = try WiredPhone(settings, key: key, store: store, restoration: restoration, transport: transport,
                                   loop: loop, events: printer, logger: logger)
        let agent = phone.agent
        // READY: the kernel has taken the pending connect (mgmt Add Device answered), or the
        // link to the lock is up already (adopted from the descriptor store after a crash:
        // a connected request is fulfilled, and no Add Device is sent for it).
        service.afterRequestsAnswered = transport.afterRequestsAnswered
        service.isSettled = { [lock = key.lock] in isSettled(transport, lock: lock) }
        // A signal's disposition is process-wide: a test process running several daemons at
        // once lets only the one that sends SIGTSTP/SIGCONT install them (`ownsSignals`).
        if ownsSignals { try phone.gates.installSignals(on: loop) }
        let (control, path) = try phone.dispatcher.serve(in: settings.stateDirectory, loop: loop, logger: logger,
                                                         peers: peers, access: settings.controlSocketAccess)
        return RunningAgent(agent: agent, gates: phone.gates, control: control, controlPath: path,
                            readiness: service, stopping: {
            logger.info("phone agent stopping")
            service.stopping()
            printer.emit(AgentEvent(.phoneStopping, time: loop.now))
            agent.stop()
        }, retained: [transport, phone])
    }

    /// What READY waits for once the transport answered: the never-timing-out connect to
    /// `lock` registered, or its link up.
    static func isSettled(_ transport: any BluetoothTransport, lock: BluetoothAddress) -> Bool {
        transport.pendingConnections.contains(lock) || transport.connectedLinks.contains { $0.peer == lock }
    }

    /// Reads a key file: 64 hex digits (whitespace ignored).
    static func readSecret(_ path: String) throws(RuntimeError) -> [UInt8] {
        try refuseExposedSecret(path)
        let text: String
        do { text = try readTextFile(path) } catch { throw RuntimeError("cannot read key file \(path): \(error)") }
        let hex = text.filter { !$0.isWhitespace }
        guard hex.count == 64 else { throw RuntimeError("key file \(path): expected 64 hex digits") }
        var out: [UInt8] = []
        var it = hex.makeIterator()
        while let a = it.next(), let b = it.next() {
            guard let v = UInt8(String([a, b]), radix: 16) else { throw RuntimeError("key file \(path): not hex") }
            out.append(v)
        }
        return out
    }
}

/// Whether anything is at `path` (a dangling or unreadable entry counts: it is there to fix).
func fileExists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}

