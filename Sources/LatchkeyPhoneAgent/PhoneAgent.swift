import LatchkeyAgents
import LatchkeyATT
import LatchkeyCentral
import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPhone
import LatchkeySecurity
import LatchkeyTransport

/// The central agent (the "phone"): keeps a connect request to its lock open forever,
/// tracks away/home, and makes one authenticated arrival request per away→home cycle, only
/// inside the window an arrival intent opened. A bare re-link never sends anything that opens
/// the door. With a `RestorationStorage` a relaunched agent adopts a link that survived it and
/// resumes its GATT setup where it stopped, never discovering what its cache holds.
/// It coordinates components that own their state (`PresenceKeeper`, `ConnectionRequest`,
/// `WakeWork`) and the lock service on the link (`LockServiceLink`, which routes the GATT
/// callbacks to the link's own components).
public final class PhoneAgent: CentralManagerDelegate, PeripheralDelegate {
    /// Requests the system refused since start (each asked again by the transport).
    public internal(set) var transportRefusals = 0
    public let configuration: PhoneAgentConfiguration
    public let central: CentralManager
    let events: any AgentEventSink
    var loop: any EventLoop { central.transport.loop }

    /// Where the phone thinks its owner is, and the last counter it used (`PresenceKeeper`).
    public var state: PhoneState { presenceKeeper.current }
    /// Presence, the arrival request and the durable state; set once in `init`, before any
    /// delegate callback can come.
    private(set) var presenceKeeper: PresenceKeeper!
    /// The lock service on the link and the components that live with it; set once in `init`.
    private(set) var link: LockServiceLink!
    var lockPeripheral: Peripheral { link.lock }
    /// The agent's events, stamped with the loop's clock (its components emit through it too).
    let output: PhoneEventOutput
    var ready: Bool { link.ready }
    var commands: CommandPipeline { link.commands }
    /// Whether the connect request stays open: not after `stop()`, nor while the key is
    /// revoked; not at once while the store refuses writes. Set once in `init`.
    private(set) var connection: ConnectionRequest!
    /// The wake-up work this agent marks (`WakeWork`): GATT setup, commands, the bolt's
    /// report after one. The runtime attaches the application gate.
    public var backgroundTasks: BackgroundTasks { wakeWork.backgroundTasks }
    let wakeWork: WakeWork
    /// Why a command did not go through.
    public enum CommandError: Error, Equatable, Sendable, CustomStringConvertible {
        case rejected(CommandRejection)
        case notDelivered(String)
        public var description: String {
            switch self {
            case .rejected(let r): "lock refused: \(r)"
            case .notDelivered(let why): "not delivered: \(why)"
            }
        }
    }

    /// The lock's last reported status bytes (opened: the lock seals them to the session).
    public var lastStatus: [UInt8]? { link.statusReports.last }
    /// Called with each status the lock reports (reads and notifications).
    public var onStatus: ((LockStatusFrame) -> Void)?
    public var presence: Presence { state.presence.presence }
    public var isLinked: Bool { lockPeripheral.state == .connected }

    public init(transport: any BluetoothTransport, configuration: PhoneAgentConfiguration, store: any PhoneStateStore,
                events: any AgentEventSink, restoration: (any RestorationStorage)? = nil) throws {
        self.configuration = configuration
        self.events = events
        let saved = try store.load()
        self.central = CentralManager(transport: transport, options: ManagerOptions(
            restoreIdentifier: configuration.restoreIdentifier, restorationStorage: restoration))
        try central.setConnectionInterval(configuration.connectionInterval)  // applied at power-on
        let lock = central.retrievePeripherals(withIdentifiers: [configuration.lockAddress])[0]
        self.output = PhoneEventOutput(sink: events, loop: central.transport.loop)
        self.wakeWork = WakeWork(backgroundTasks: BackgroundTasks(), events: output)
        presenceKeeper = PresenceKeeper(restoring: saved, store: store, configuration: configuration, events: output) {
            [weak self] cycle in self?.requestArrival(cycle)
        }
        connection = ConnectionRequest(configuration: configuration, events: output) { [weak self] in
            self?.retryAfterBackoff()
        }
        link = LockServiceLink(agent: self, lock: lock, configuration: configuration, wakeWork: wakeWork, output: output)
        central.delegate = self
        lock.delegate = self
        emit(.phoneStarted(presence: .init(state.presence.presence), cycle: state.presence.cycle))
    }

    // MARK: Commands

    /// Sends an authenticated command: read a fresh challenge, seal, write, wait for the
    /// Write Response. Runs after the GATT setup on the current link.
    public func perform(_ operation: LockOperation, completion: @escaping (Result<Void, CommandError>) -> Void) {
        enqueue(operation, nil, completion)
    }

    /// Asks the lock to switch its operating mode (a Matter OperatingMode value); the lock
    /// accepts it from an admin key only.
    public func setOperatingMode(_ mode: UInt8, completion: @escaping (Result<Void, CommandError>) -> Void) {
        enqueue(.setOperatingMode, mode, completion)
    }

    private func enqueue(_ operation: LockOperation, _ mode: UInt8?,
                         _ completion: @escaping (Result<Void, CommandError>) -> Void) {
        askAgainIfTheOwnerAsks(operation)
        // Backing off from a store that refused writes, with no link: the owner's tap tries a
        // save now rather than at the back-off's next step. One that works links at once;
        // one that fails tells the owner now, not when the command would have gone.
        if connection.isBackingOff && operation != .present && operation != .arrivalUnlock {
            guard presenceKeeper.saveAgain() else {
                completion(.failure(.notDelivered(CommandPipeline.counterNotSaved)))
                return
            }
            requestConnection()
        }
        commands.append(operation, mode: mode, completion: completion)
        // A command asked for before the link is ready waits for it (the owner tapped
        // "unlock" walking up to the door): said, so that the wait can be seen and timed.
        if !ready { emit(.phoneCommandWaitsForLink(op: .init(operation))) }
        link.linkInterval.linkBecameBusy()
        commands.pump()
    }

    // MARK: CentralManagerDelegate

    public func centralManagerDidUpdateState(_ central: CentralManager) {
        emit(.phoneRadio(state: .init(central.state)))
        guard central.state == .poweredOn else { return }
        requestConnection()
        if lockPeripheral.state == .connected && !ready && link.control == nil {
            linkEstablished(lockPeripheral, adopted: true)  // restored with the link that survived us
        } else if lockPeripheral.state != .connected && state.presence.presence == .unknown {
            // No link at start and no history: begin the grace period, as after a drop.
            feed(.linkDown)
        }
    }

    func requestConnection() {
        // A store that refused the last save may take writes again (its disk came back while
        // nothing was saved): asked before a back-off starts, so that a drop then re-links at once.
        if presenceKeeper.storeRefusing && !connection.isBackingOff { presenceKeeper.saveAgain() }
        guard connection.next(storeRefusing: presenceKeeper.storeRefusing) == .connect else { return }
        do {
            try central.connect(lockPeripheral, options: configuration.connectOptions)
            emit(.phoneConnectPending(lock: "\(configuration.lockAddress)"))
        } catch {
            emit(.phoneConnectFailed(error: "\(error)"))
        }
    }

    /// A step of the back-off ended: a save tells whether the store takes writes again; the
    /// request goes if it does, and the next, longer step starts if not.
    private func retryAfterBackoff() {
        presenceKeeper.saveAgain()
        requestConnection()
    }

    public func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        linkEstablished(peripheral, adopted: false)
    }

    private func linkEstablished(_ peripheral: Peripheral, adopted: Bool) {
        let lock = "\(peripheral.identifier)"
        emit(adopted ? .phoneLinkAdopted(lock: lock) : .phoneLinked(lock: lock))
        link.linkFormed()
        // The presence machine first: an arrival request it makes is queued before a known
        // lock's setup, which needs no request of its own now, makes the link ready (and
        // `becomeReady` would send `present` to an empty queue).
        feed(.linkUp)
        link.continueSetup(peripheral)
    }

    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral,
                               error: BluetoothError?) {
        emit(.phoneLinkLost(reason: error.map { "\($0)" } ?? "cancelled"))
        link.linkLost()
        wakeWork.boltReported()
        commands.failAll("link lost")
        presenceKeeper.cancelArrivalRetry()
        link.logTransfer.abandon("link lost")
        // Keep the never-timing-out request open: the next return re-links by itself.
        requestConnection()
        feed(.linkDown)
    }

    // MARK: PeripheralDelegate (the lock service on the link routes them)

    public func peripheral(_ peripheral: Peripheral, didDiscoverServices error: BluetoothError?) {
        link.discoveredServices(peripheral, error: error)
    }

    public func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: RemoteService,
                           error: BluetoothError?) {
        link.discoveredCharacteristics(peripheral, of: service, error: error)
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        link.notificationStateChanged(peripheral, for: characteristic, error: error)
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        link.valueUpdated(peripheral, for: characteristic, error: error)
    }

    public func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        link.valueWritten(peripheral, for: characteristic, error: error)
    }

    func emit(_ event: Event) {
        output.emit(event)
    }
}
