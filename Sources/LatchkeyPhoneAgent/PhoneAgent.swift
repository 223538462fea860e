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
/// It coordinates components that own their state (`PresenceKeeper`, `CommandPipeline`,
/// `ChallengeReadAhead`, `PhoneLinkSession`, `LockServiceSetup`, `LogTransfer`, `WakeWork`,
/// `LinkIntervalGovernor`, `ConnectionRequest`, `LockStatusReports`) and does their link I/O.
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
    private let lock: Peripheral
    var lockPeripheral: Peripheral { lock }
    /// The agent's events, stamped with the loop's clock (its components emit through it too).
    let output: PhoneEventOutput
    /// The audit log's fetch on this link.
    let logTransfer: LogTransfer
    /// The link's connection interval: fast while busy, slow while idle.
    lazy var linkInterval = LinkIntervalGovernor(
        connectionInterval: configuration.connectionInterval,
        idleConnectionInterval: configuration.idleConnectionInterval, idleAfter: configuration.idleAfter,
        link: LinkIntervalGovernor.Link(
            isIdle: { [weak self] in self?.linkIsIdle ?? false },
            isConnected: { [weak self] in self?.lock.state == .connected },
            request: { [weak self] in self?.lock.requestConnectionInterval($0) ?? false }),
        events: output)
    /// The lock service's GATT setup on the current link: its handles, whether it is ready.
    lazy var setup = LockServiceSetup<RemoteCharacteristic>(
        timeout: configuration.setupTimeout, backgroundTasks: backgroundTasks, loop: loop) { [weak self] in
        self?.setupTimedOut()
    }
    var ready: Bool { setup.ready }
    var control: RemoteCharacteristic? { setup.control }
    var challenge: RemoteCharacteristic? { setup.challenge }
    var status: RemoteCharacteristic? { setup.status }
    var transferCharacteristic: RemoteCharacteristic? { setup.transfer }
    /// The commands: waiting for the GATT setup or their turn, in flight, answered.
    lazy var commands = CommandPipeline(
        configuration: configuration,
        link: CommandPipeline.Link(
            isReady: { [weak self] in self?.ready ?? false },
            hasChallenge: { [weak self] in self?.challenge != nil },
            readChallenge: { [weak self] in
                guard let self, let challenge else { return }
                lock.readValue(for: challenge)
            },
            canWrite: { [weak self] in self?.control != nil },
            write: { [weak self] frame in
                guard let self, let control else { return }
                lock.writeValue(frame, for: control, withResponse: true)
            },
            rediscoverIfStale: { [weak self] error in
                guard let self else { return false }
                return rediscoverIfStale(lock, error)
            },
            drop: { [weak self] in
                guard let self else { return }
                central.cancelPeripheralConnection(lock)
            },
            nextCounter: { [weak self] in self?.presenceKeeper.nextCounter() ?? 0 }),
        readAhead: readAhead, session: linkSession, wakeWork: wakeWork, events: output)
    /// Whether the connect request stays open: not after `stop()`, nor while the key is revoked.
    let connection: ConnectionRequest
    /// The wake-up work this agent marks (`WakeWork`): GATT setup, commands, the bolt's
    /// report after one. The runtime attaches the application gate.
    public var backgroundTasks: BackgroundTasks { wakeWork.backgroundTasks }
    let wakeWork: WakeWork
    /// The link's session, and the one the command in flight opens.
    let linkSession: PhoneLinkSession
    /// The challenge read ahead of the next command.
    let readAhead: ChallengeReadAhead
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
    public var lastStatus: [UInt8]? { statusReports.last }
    let statusReports: LockStatusReports
    /// Called with each status the lock reports (reads and notifications).
    public var onStatus: ((LockStatusFrame) -> Void)?
    public var presence: Presence { state.presence.presence }
    public var isLinked: Bool { lock.state == .connected }

    public init(transport: any BluetoothTransport, configuration: PhoneAgentConfiguration, store: any PhoneStateStore,
                events: any AgentEventSink, restoration: (any RestorationStorage)? = nil) throws {
        self.configuration = configuration
        self.events = events
        let saved = try store.load()
        self.central = CentralManager(transport: transport, options: ManagerOptions(
            restoreIdentifier: configuration.restoreIdentifier, restorationStorage: restoration))
        try central.setConnectionInterval(configuration.connectionInterval)  // applied at power-on
        self.lock = central.retrievePeripherals(withIdentifiers: [configuration.lockAddress])[0]
        self.output = PhoneEventOutput(sink: events, loop: central.transport.loop)
        self.logTransfer = LogTransfer(events: output)
        self.readAhead = ChallengeReadAhead(events: output)
        self.linkSession = PhoneLinkSession(secret: configuration.secret, events: output)
        self.wakeWork = WakeWork(backgroundTasks: BackgroundTasks(), events: output)
        self.connection = ConnectionRequest(configuration: configuration, events: output)
        self.statusReports = LockStatusReports(events: output)
        presenceKeeper = PresenceKeeper(restoring: saved, store: store, configuration: configuration, events: output) {
            [weak self] cycle in self?.requestArrival(cycle)
        }
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
        commands.append(operation, mode: mode, completion: completion)
        // A command asked for before the link is ready waits for it (the owner tapped
        // "unlock" walking up to the door): said, so that the wait can be seen and timed.
        if !ready { emit(.phoneCommandWaitsForLink(op: .init(operation))) }
        linkInterval.linkBecameBusy()
        commands.pump()
    }

    /// No command queued or in flight: the link's ATT queue is free for the subscription
    /// (`subscribeOnceInSession`), which must not slip between a challenge read and its write.
    var commandsIdle: Bool { commands.isIdle }

    /// The GATT setup did not finish: a request was lost (the lock died and adopted the link
    /// again without having seen it). Drop the link; the request that never times out forms
    /// a fresh one.
    private func setupTimedOut() {
        guard lock.state == .connected else { return }
        emit(.phoneSetupTimeout)
        central.cancelPeripheralConnection(lock)
    }

    // MARK: CentralManagerDelegate

    public func centralManagerDidUpdateState(_ central: CentralManager) {
        emit(.phoneRadio(state: .init(central.state)))
        guard central.state == .poweredOn else { return }
        requestConnection()
        if lock.state == .connected && !ready && control == nil {
            linkEstablished(lock, adopted: true)  // restored with the link that survived us
        } else if lock.state != .connected && state.presence.presence == .unknown {
            // No link at start and no history: begin the grace period, as after a drop.
            feed(.linkDown)
        }
    }

    func requestConnection() {
        guard connection.isWanted else { return }
        do {
            try central.connect(lock, options: configuration.connectOptions)
            emit(.phoneConnectPending(lock: "\(configuration.lockAddress)"))
        } catch {
            emit(.phoneConnectFailed(error: "\(error)"))
        }
    }

    public func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        linkEstablished(peripheral, adopted: false)
    }

    private func linkEstablished(_ peripheral: Peripheral, adopted: Bool) {
        let lock = "\(peripheral.identifier)"
        emit(adopted ? .phoneLinkAdopted(lock: lock) : .phoneLinked(lock: lock))
        readAhead.forgetChallengeAhead()
        linkInterval.forgetLinkInterval()
        linkSession.endSession()
        setup.linkFormed()
        // The presence machine first: an arrival request it makes is queued before a known
        // lock's setup, which needs no request of its own now, makes the link ready (and
        // `becomeReady` would send `present` to an empty queue).
        feed(.linkUp)
        continueSetup(peripheral)
    }

    /// The lock service's handles changed under the link: what was bound to them goes, the
    /// command in flight (its next step would use an old handle) fails, and the setup runs
    /// again, under its timeout.
    func restartSetup(_ peripheral: Peripheral, because why: String) {
        setup.restart()
        readAhead.forgetChallengeAhead()
        linkInterval.forgetLinkInterval()
        commands.failInFlight(why)
        logTransfer.abandon(why)
        continueSetup(peripheral)
    }

    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral,
                               error: BluetoothError?) {
        emit(.phoneLinkLost(reason: error.map { "\($0)" } ?? "cancelled"))
        setup.linkLost()
        readAhead.forgetChallengeAhead()
        linkInterval.forgetLinkInterval()
        linkSession.endSession()
        wakeWork.boltReported()
        commands.failAll("link lost")
        presenceKeeper.cancelArrivalRetry()
        logTransfer.abandon("link lost")
        // Keep the never-timing-out request open: the next return re-links by itself.
        requestConnection()
        feed(.linkDown)
    }

    // MARK: PeripheralDelegate

    public func peripheral(_ peripheral: Peripheral, didDiscoverServices error: BluetoothError?) {
        guard peripheral.service(LockServiceUUID.service) != nil else {
            emit(.phoneGattFailed(step: "services", error: error.map { "\($0)" } ?? "lock service missing"))
            return
        }
        continueSetup(peripheral)
    }

    public func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: RemoteService,
                           error: BluetoothError?) {
        guard bindCharacteristics(of: service) else {
            emit(.phoneGattFailed(step: "characteristics", error: error.map { "\($0)" } ?? "missing"))
            return
        }
        continueSetup(peripheral)
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        if characteristic === transferCharacteristic { carryOut(logTransfer.subscriptionChanged(error: error)); return }
        guard characteristic === status else { return }
        if let error {
            if rediscoverIfStale(peripheral, error) { return }
            emit(.phoneGattFailed(step: "subscribe", error: "\(error)"))
            return
        }
        emit(.phoneSubscribed)
    }

    /// The lock service is usable on this link: tie the link to our key and send what waits.
    func becomeReady(_ peripheral: Peripheral) {
        setup.becameReady()
        emit(.phoneGattReady(mtu: peripheral.mtu))
        defer { setup.setupDone() }
        // Tie this link to our key on the lock (its loss then starts the lock's departure
        // grace). An arrival request, when one is queued, does that already.
        if commands.isIdle {
            perform(.present) { [weak self] result in
                if case .failure(let e) = result { self?.emit(.phonePresentFailed(error: "\(e)")) }
            }
        }
        commands.pump()
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        if characteristic === transferCharacteristic, let v = characteristic.value, error == nil {
            logTransfer.receive(v) { openReply($0, as: .logTransfer) }
            return
        }
        if characteristic === status, let sealed = characteristic.value, error == nil {
            guard let v = openReply(sealed, as: .status), let frame = statusReports.received(v) else { return }
            if wakeWork.statusReported(frame) {
                // Before the app hears of it: a command it sends at once waits for this read.
                readChallengeAheadOnceTheBoltRests(peripheral)
            }
            onStatus?(frame)
            presenceKeeper.retryArrivalIfTheBoltRests(frame)
            return
        }
        guard characteristic === challenge else { return }
        if readAhead.isReading {
            challengeReadAhead(peripheral, value: characteristic.value, error: error)
            return
        }
        commands.challengeRead(value: characteristic.value, error: error)
    }

    public func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        if characteristic === transferCharacteristic { logTransfer.requestWritten(error: error); return }
        guard characteristic === control else { return }
        let answer = commands.writeAnswered(error: error)
        guard answer != .none, answer != .sentAgain else { return }
        if case .answered(_, .unknownKey?) = answer { lockSaidOurKeyIsRevoked() }
        subscribeOnceInSession(peripheral)  // after the next command, if one waits
        readChallengeAhead(peripheral)      // for the next command, once nothing waits
        linkInterval.linkWentIdle()         // if nothing else is under way
    }

    /// Nothing under way on a ready link: no command, no challenge read ahead, no log fetch.
    var linkIsIdle: Bool { ready && commandsIdle && !readAhead.isReading && !logTransfer.isRunning }

    func emit(_ event: Event) {
        output.emit(event)
    }
}
