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

public struct PhoneAgentConfiguration: Sendable {
    public var lockAddress: BluetoothAddress
    public var keyID: UInt32
    public var secret: [UInt8]
    /// How long the link must stay down before the owner counts as away. 30 s rides out the
    /// short drops a body or a door between phone and lock cause; configurable per home.
    public var gracePeriod: Duration
    public var connectOptions: ConnectOptions
    /// The central manager's restore identifier: its request, link and attribute cache
    /// are preserved under it when the agent is given a `RestorationStorage`.
    public var restoreIdentifier: String
    /// A command with no answer by then is given up and the link dropped, so that the
    /// never-timing-out request forms a fresh one. 5 s: the lifetime of the challenge the
    /// command is sealed with (`ChallengeIssuer.defaultLifetime`), counted from the
    /// command's start (its challenge read, or its write sealed with a challenge read ahead,
    /// which dies sooner) — a later answer cannot be a success, and a request lost with a lock
    /// that died would otherwise hold the bearer for ATT's 30 s (Vol 3 Part F 3.3.3).
    public var commandTimeout: Duration
    /// A GATT setup (services, characteristics, the status subscription) not done by then
    /// is given up the same way: a request the lock never saw would otherwise block the
    /// bearer for ATT's 30 s. 10 s: a full discovery is about ten ATT round trips, under a
    /// second at the kernel's longest default connection interval (50 ms).
    public var setupTimeout: Duration
    /// An arrival request refused as busy (the bolt was moving) is asked once more when the
    /// lock reports the bolt at rest, or after this long at the latest. 6 s: the lock's jam
    /// timeout (5 s, `LockBehaviour.jamTimeout`), by which any movement has arrived or been
    /// declared a jam, plus a second for the status to cross the link (twenty connection
    /// intervals at the kernel's longest default, 50 ms).
    public var arrivalRetryWait: Duration
    /// How long an arrival intent (`arrivalIntent()`: the control socket's `arriving`, a hook
    /// standing in for a phone OS's geofence) lets a re-formed link ask for an arrival unlock.
    /// One intent allows one request. 120 s: a geofence of ~100 m fires a walk of a minute
    /// or two from the door, often late; longer leaves a relay more time to work with.
    public var arrivalIntentWindow: Duration
    /// How long the phone stays `nearby` (back, linked, no intent yet) before it counts its
    /// owner as home and the cycle as over without an arrival request (`PresenceMachine`).
    /// 120 s: the intent window's length, so a link first and a late geofence still unlock,
    /// and an intent long after the owner came in asks nothing.
    public var nearbyLimit: Duration
    /// The connection interval the phone asks the system for (the central chooses it). Each
    /// ATT round trip costs two connection events, and a returning phone's command follows
    /// the link-layer setup (two events) and three round trips, the last only half: at 7.5 ms,
    /// BLE's shortest, link → unlock line is seven events, 52.5 ms; at the kernel's 30 ms
    /// default, 210 ms (docs/ARCHITECTURE.md, "Link to unlock"). Nil: the kernel's default.
    public var connectionInterval: Duration?
    /// The interval the phone asks for once the link has idled for `idleAfter`
    /// (`PhoneAgent+LinkInterval`); nil keeps `connectionInterval` while linked. Off by
    /// default: the kernel transport cannot update a live link yet.
    public var idleConnectionInterval: Duration?
    /// 5 s: the life of the challenge the phone reads ahead (`ChallengeIssuer.defaultLifetime`).
    public var idleAfter: Duration

    public static let defaultGracePeriod: Duration = .seconds(30)
    public static let defaultRestoreIdentifier = "latchkey.phone.central"

    public init(lockAddress: BluetoothAddress, keyID: UInt32, secret: [UInt8],
                gracePeriod: Duration = PhoneAgentConfiguration.defaultGracePeriod,
                connectOptions: ConnectOptions = ConnectOptions(notifyOnConnection: true, notifyOnDisconnection: true),
                restoreIdentifier: String = PhoneAgentConfiguration.defaultRestoreIdentifier,
                commandTimeout: Duration = ChallengeIssuer.defaultLifetime, setupTimeout: Duration = .seconds(10),
                arrivalRetryWait: Duration = .seconds(6),
                arrivalIntentWindow: Duration = PhoneAgentConfiguration.defaultArrivalIntentWindow,
                nearbyLimit: Duration = PhoneAgentConfiguration.defaultNearbyLimit,
                connectionInterval: Duration? = PhoneAgentConfiguration.defaultConnectionInterval,
                idleConnectionInterval: Duration? = nil, idleAfter: Duration = ChallengeIssuer.defaultLifetime) {
        self.lockAddress = lockAddress; self.keyID = keyID; self.secret = secret
        self.gracePeriod = gracePeriod; self.connectOptions = connectOptions
        self.restoreIdentifier = restoreIdentifier; self.commandTimeout = commandTimeout
        self.setupTimeout = setupTimeout; self.arrivalRetryWait = arrivalRetryWait
        self.arrivalIntentWindow = arrivalIntentWindow
        self.nearbyLimit = nearbyLimit
        self.connectionInterval = connectionInterval
        self.idleConnectionInterval = idleConnectionInterval; self.idleAfter = idleAfter
    }

    public static let defaultArrivalIntentWindow: Duration = .seconds(120)
    public static let defaultNearbyLimit: Duration = .seconds(120)
    /// 7.5 ms: the shortest the Core spec allows (Vol 6 Part B 4.5.1).
    public static let defaultConnectionInterval: Duration? = .microseconds(7_500)
}

/// The central agent (the "phone"): keeps a connect request to its lock open forever,
/// tracks away/home, and makes one authenticated arrival request per away→home cycle, only
/// inside the window an arrival intent opened. A bare re-link never sends anything that
/// opens the door.
/// With a `RestorationStorage` its central manager preserves the request, the link and the
/// lock's attribute cache: a relaunched agent adopts a link that survived it and resumes
/// its GATT setup where it stopped (`PhoneAgent+Restoration.swift`) — it never discovers
/// the lock's services again while its cache holds them.
public final class PhoneAgent: CentralManagerDelegate, PeripheralDelegate {
    /// Requests the system refused since start (each asked again by the transport).
    public internal(set) var transportRefusals = 0
    public let configuration: PhoneAgentConfiguration
    public let central: CentralManager
    let store: any PhoneStateStore
    let events: any AgentEventSink
    var loop: any EventLoop { central.transport.loop }

    public private(set) var state: PhoneState
    private var graceTimer: Scheduled?
    /// The nearby limit's clock (`PresenceMachine.startNearbyClock`).
    private var nearbyTimer: Scheduled?
    /// A reply sealed to this link's session opened on it: the lock is on this link.
    var linkVerified = false
    private let lock: Peripheral
    var lockPeripheral: Peripheral { lock }
    var transferCharacteristic: RemoteCharacteristic?
    var logFetch: LogFetch?
    /// The running fetch's silence watch (`PhoneAgent+Log.swift`).
    var logFetchTimer: Scheduled?
    /// The last log fetch's figures, set before its completion runs (nil while one runs, or
    /// when its reply never reassembled).
    public internal(set) var lastLogTransfer: LogTransferFigures?
    /// GATT handles, once discovered on the current link.
    var control: RemoteCharacteristic?
    var challenge: RemoteCharacteristic?
    var status: RemoteCharacteristic?
    /// Commands waiting for the GATT setup, or for the previous one to finish.
    private var queue: [Queued] = []
    private var inFlight: InFlight?
    private var commandTimer: Scheduled?
    private var setupTimer: Scheduled?
    var ready = false
    /// The cache was found stale on this link and discovered again (once per link).
    var rediscoveredOnThisLink = false
    /// After `stop()`: no new connect request.
    var stopped = false
    /// The lock answered "revoked key" (said only once our frame's tag verified under our key):
    /// the phone stops asking — no link, no automatic `present` or arrival — until its owner
    /// asks for a command by hand or restarts it (PhoneAgent+Revoked.swift).
    public internal(set) var keyRevoked = false
    /// The wake-up work this agent marks (PhoneAgent+Wake.swift): GATT setup, commands, the
    /// bolt's report after one. The runtime attaches the application gate.
    public let backgroundTasks = BackgroundTasks()
    /// Settled lock states reported so far, and how many there were when the command in
    /// flight was written: a report may overtake the Write Response.
    var settledReports = 0
    var settledReportsAtWrite = 0
    var boltReportTimer: Scheduled?
    /// An arrival request that met a moving bolt, waiting to be asked again (`PhoneAgent+Arrival`).
    var arrivalRetry: (cycle: UInt64, timer: Scheduled)?
    /// The link's session, and the one the command in flight opens (`PhoneAgent+Session`).
    var session: LinkSession?
    var candidateSession: LinkSession?
    /// The open arrival intent's window (`PhoneAgent+Arrival`).
    var intentTimer: Scheduled?
    /// The challenge read ahead of the next command, and when its read went (`PhoneAgent+Challenge`).
    var heldChallenge: HeldChallenge?
    var prefetchSentAt: Instant?
    var readAheadAwaitsTheBolt = false
    /// The idle link's slow interval (`PhoneAgent+LinkInterval`): its timer, whether it is in
    /// force, and whether the transport's refusal has been said.
    var idleTimer: Scheduled?
    var linkSlowed = false
    var linkIntervalRefusalSaid = false

    private struct InFlight {
        var operation: LockOperation
        /// The argument of `setOperatingMode`.
        var mode: UInt8?
        var sentAt: Instant
        var completion: (Result<Void, CommandError>) -> Void
        var awaitingChallenge: Bool
        /// Sealed with a challenge read ahead: a lock that no longer holds it (it restarted)
        /// refuses it as stale, and the command is sent once more with a fresh read.
        var usedHeldChallenge = false
        /// This command was sent again after that refusal (only once).
        var retried = false
        /// It came while the challenge read ahead was on its way, and waits for it.
        var awaitingReadAhead = false
    }

    /// A command waiting its turn.
    private struct Queued {
        var operation: LockOperation
        var mode: UInt8?
        var completion: (Result<Void, CommandError>) -> Void
        var retried = false
    }

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
    public private(set) var lastStatus: [UInt8]?
    /// Called with each status the lock reports (reads and notifications).
    public var onStatus: ((LockStatusFrame) -> Void)?
    public var presence: Presence { state.presence.presence }
    public var isLinked: Bool { lock.state == .connected }

    public init(transport: any BluetoothTransport, configuration: PhoneAgentConfiguration, store: any PhoneStateStore,
                events: any AgentEventSink, restoration: (any RestorationStorage)? = nil) throws {
        self.configuration = configuration
        self.store = store
        self.events = events
        // A phone that died while leaving or arriving resumes as away (PresenceMachine rules).
        let saved = try store.load()
        self.state = saved.map { PhoneState(presence: PresenceMachine(restoring: $0.presence), counter: $0.counter) }
            ?? PhoneState()
        self.central = CentralManager(transport: transport, options: ManagerOptions(
            restoreIdentifier: configuration.restoreIdentifier, restorationStorage: restoration))
        try central.setConnectionInterval(configuration.connectionInterval)  // applied at power-on
        self.lock = central.retrievePeripherals(withIdentifiers: [configuration.lockAddress])[0]
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
        queue.append(Queued(operation: operation, mode: mode, completion: completion))
        backgroundTasks.begin(Self.commandsTask)
        // A command asked for before the link is ready waits for it (the owner tapped
        // "unlock" walking up to the door): said, so that the wait can be seen and timed.
        if !ready { emit(.phoneCommandWaitsForLink(op: .init(operation))) }
        linkBecameBusy()
        pump()
    }

    /// No command queued or in flight: the link's ATT queue is free for the subscription
    /// (`subscribeOnceInSession`), which must not slip between a challenge read and its write.
    var commandsIdle: Bool { queue.isEmpty && inFlight == nil }

    /// Starts the next queued command, under its timeout: sealed at once with a challenge
    /// read ahead, or after reading one. One that comes while the read ahead is on its way
    /// waits for it (`sendAfterReadAhead`): the bearer takes one request at a time.
    func pump() {
        guard ready, inFlight == nil, !queue.isEmpty, challenge != nil else { return }
        let next = queue.removeFirst()
        let op = next.operation
        inFlight = InFlight(operation: op, mode: next.mode, sentAt: loop.now, completion: next.completion,
                            awaitingChallenge: true, retried: next.retried)
        commandTimer = loop.schedule(after: configuration.commandTimeout) { [weak self] in self?.commandTimedOut() }
        if prefetchSentAt != nil {
            emit(.phoneCommandStarted(op: .init(op), challenge: .ahead))  // the read under way serves it
            inFlight?.awaitingReadAhead = true
            return
        }
        sendInFlight(announcing: true)
    }

    /// The command in flight goes: its sealed write with a held challenge, else its read.
    private func sendInFlight(announcing: Bool) {
        guard let op = inFlight?.operation, let challenge else { return }
        if let held = takeHeldChallenge(for: op) {
            if announcing { emit(.phoneCommandStarted(op: .init(op), challenge: .held)) }  // its write goes now
            inFlight?.usedHeldChallenge = true
            sealAndWrite(challenge: held, lock)
        } else {
            if announcing { emit(.phoneCommandStarted(op: .init(op))) }  // its challenge read goes now
            lock.readValue(for: challenge)
        }
    }

    /// The read ahead answered while a command waited for it.
    func sendAfterReadAhead() {
        guard inFlight?.awaitingReadAhead == true else { return }
        inFlight?.awaitingReadAhead = false
        sendInFlight(announcing: false)
    }

    private func finish(_ result: Result<Void, CommandError>) {
        guard let f = inFlight else { return }
        inFlight = nil
        commandTimer?.cancel()
        commandTimer = nil
        f.completion(result)
        pump()
        if queue.isEmpty && inFlight == nil { backgroundTasks.end(Self.commandsTask) }
    }

    private func failAllCommands(_ why: String) {
        let pending = queue
        queue.removeAll()
        commandTimer?.cancel()
        commandTimer = nil
        if let f = inFlight { inFlight = nil; f.completion(.failure(.notDelivered(why))) }
        for q in pending { q.completion(.failure(.notDelivered(why))) }
        if queue.isEmpty && inFlight == nil { backgroundTasks.end(Self.commandsTask) }
    }

    /// The GATT setup did not finish: a request was lost (the lock died and adopted the link
    /// again without having seen it). Drop the link; the request that never times out forms
    /// a fresh one.
    private func setupTimedOut() {
        setupTimer = nil
        backgroundTasks.end(Self.setupTask)
        guard !ready, lock.state == .connected else { return }
        emit(.phoneSetupTimeout)
        central.cancelPeripheralConnection(lock)
    }

    /// No answer within the challenge's lifetime: the request or its answer was lost (a lock
    /// that died and adopted the link again never saw it). Drop the link; the request that
    /// never times out forms a fresh one.
    private func commandTimedOut() {
        commandTimer = nil
        guard let f = inFlight else { return }
        emit(.phoneCommandTimeout(op: .init(f.operation)))
        finish(.failure(.notDelivered("no answer within \(configuration.commandTimeout)")))
        central.cancelPeripheralConnection(lock)
    }

    // MARK: Presence

    func feed(_ input: PresenceMachine.Input) {
        let before = state.presence.presence
        let actions = state.presence.handle(input)
        for action in actions {
            switch action {
            case .persist:
                persist()
            case .startGraceTimer:
                graceTimer?.cancel()
                graceTimer = loop.schedule(after: configuration.gracePeriod) { [weak self] in
                    self?.graceTimer = nil
                    self?.feed(.graceExpired)
                }
            case .cancelGraceTimer:
                graceTimer?.cancel()
                graceTimer = nil
            case .departed(let cycle):
                emit(.phoneAway(cycle: cycle))
            case .startNearbyClock(let cycle):
                nearbyTimer?.cancel()
                nearbyTimer = loop.schedule(after: configuration.nearbyLimit) { [weak self] in
                    self?.nearbyTimer = nil
                    self?.feed(.nearbyExpired(cycle: cycle))
                }
            case .returnedWithoutAsking(let cycle):
                emit(.phoneHomeWithoutArrival(cycle: cycle,
                                              nearbySeconds: configuration.nearbyLimit))
            case .requestArrivalUnlock(let cycle):
                emit(.phoneArrivalRequest(cycle: cycle))
                requestArrival(cycle)
            case .retryArrivalUnlockAfterMovement(let cycle):
                waitToRetryArrival(cycle)
            case .openIntentWindow:
                openIntentWindow()
            case .closeIntentWindow:
                intentTimer?.cancel()
                intentTimer = nil
            case .arrived(let cycle, let unlocked):
                emit(.phoneHome(cycle: cycle, unlocked: unlocked))
            }
        }
        if state.presence.presence != before {
            emit(.phonePresence(from: .init(before), to: .init(state.presence.presence)))
        }
    }

    private func persist() {
        do { try store.save(state) } catch {
            emit(.phonePersistFailed(error: "\(error)"))
        }
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
        guard !stopped, !keyRevoked else { return }
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
        ready = false
        forgetChallengeAhead()
        forgetLinkInterval()
        rediscoveredOnThisLink = false
        control = nil; challenge = nil; status = nil
        endSession()
        linkVerified = false
        armSetupTimer()
        // The presence machine first: an arrival request it makes is queued before a known
        // lock's setup, which needs no request of its own now, makes the link ready (and
        // `becomeReady` would send `present` to an empty queue).
        feed(.linkUp)
        continueSetup(peripheral)
    }

    /// The GATT setup starts (a new link, or again after Service Changed): under its
    /// timeout, and marked as wake work so a background wake-up covers it.
    private func armSetupTimer() {
        setupTimer?.cancel()
        setupTimer = loop.schedule(after: configuration.setupTimeout) { [weak self] in self?.setupTimedOut() }
        backgroundTasks.begin(Self.setupTask)
    }

    /// The lock service's handles changed under the link: what was bound to them goes, the
    /// command in flight (its next step would use an old handle) fails, and the setup runs
    /// again, under its timeout.
    func restartSetup(_ peripheral: Peripheral, because why: String) {
        ready = false
        forgetChallengeAhead()
        forgetLinkInterval()
        control = nil; challenge = nil; status = nil; transferCharacteristic = nil
        if inFlight != nil { finish(.failure(.notDelivered(why))) }
        if let fetch = logFetch { logFetch = nil; fetch.completion(.failure(.notDelivered(why))) }
        armSetupTimer()
        continueSetup(peripheral)
    }

    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral,
                               error: BluetoothError?) {
        emit(.phoneLinkLost(reason: error.map { "\($0)" } ?? "cancelled"))
        ready = false
        linkVerified = false
        forgetChallengeAhead()
        forgetLinkInterval()
        endSession()
        setupTimer?.cancel()
        setupTimer = nil
        backgroundTasks.end(Self.setupTask)
        boltReported()
        failAllCommands("link lost")
        cancelArrivalRetry()
        if let fetch = logFetch { logFetch = nil; fetch.completion(.failure(.notDelivered("link lost"))) }
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
        if characteristic === transferCharacteristic { logSubscriptionChanged(error: error); return }
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
        ready = true
        setupTimer?.cancel()
        setupTimer = nil
        emit(.phoneGattReady(mtu: peripheral.mtu))
        defer { backgroundTasks.end(Self.setupTask) }
        // Tie this link to our key on the lock (its loss then starts the lock's departure
        // grace). An arrival request, when one is queued, does that already.
        if queue.isEmpty && inFlight == nil {
            perform(.present) { [weak self] result in
                if case .failure(let e) = result { self?.emit(.phonePresentFailed(error: "\(e)")) }
            }
        }
        pump()
    }

    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        if characteristic === transferCharacteristic, let v = characteristic.value, error == nil {
            logChunk(v)
            return
        }
        if characteristic === status, let sealed = characteristic.value, error == nil {
            guard let v = openReply(sealed, as: .status) else { return }
            lastStatus = v
            // A status the phone cannot decode changes nothing it acts on; the raw value stays in lastStatus.
            if let frame = try? LockStatusFrame(decoding: v) {
                emit(.phoneLockStatus(lockState: frame.lockState, doorState: frame.doorState))
                if Self.isSettled(frame) {
                    settledReports += 1
                    boltReported()
                    // Before the app hears of it: a command it sends at once waits for this read.
                    readChallengeAheadOnceTheBoltRests(peripheral)
                }
                onStatus?(frame)
                retryArrivalIfTheBoltRests(frame)
            }
            return
        }
        guard characteristic === challenge else { return }
        if prefetchSentAt != nil {
            challengeReadAhead(peripheral, value: characteristic.value, error: error)
            return
        }
        guard let f = inFlight, f.awaitingChallenge else { return }
        if let error {
            // The first request on cached handles: a stale cache shows here. Discover again
            // and send the same command once the setup is done.
            if rediscoverIfStale(peripheral, error) {
                inFlight = nil
                commandTimer?.cancel()
                commandTimer = nil
                queue.insert(Queued(operation: f.operation, mode: f.mode, completion: f.completion, retried: f.retried), at: 0)
                return
            }
            finish(.failure(.notDelivered("challenge read: \(error)")))
            return
        }
        // An undecodable grant fails the command below (notDelivered), reported to the caller.
        guard let grant = try? ChallengeGrant(decoding: characteristic.value ?? []) else {
            finish(.failure(.notDelivered("bad challenge")))
            return
        }
        sealAndWrite(challenge: grant.challenge, peripheral)
    }

    /// Seals the command in flight with `challenge` and writes it to the control point.
    private func sealAndWrite(challenge: [UInt8], _ peripheral: Peripheral) {
        guard var f = inFlight, let control else {
            finish(.failure(.notDelivered("lock control characteristic unknown")))
            return
        }
        f.awaitingChallenge = false
        inFlight = f
        // The counter is durable before the frame leaves: a restart never reuses one.
        state.counter += 1
        persist()
        do {
            let frame = try CommandSealing.seal(CommandBody(operation: f.operation, commandID: state.counter,
                                                            operatingMode: f.mode),
                                                keyID: configuration.keyID, secret: configuration.secret,
                                                counter: state.counter, challenge: challenge)
            prepareSession(for: frame)
            emit(.phoneCommandSent(op: .init(f.operation), counter: state.counter))
            settledReportsAtWrite = settledReports
            peripheral.writeValue(frame.bytes, for: control, withResponse: true)
        } catch {
            finish(.failure(.notDelivered("seal: \(error)")))
        }
    }

    public func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {
        if characteristic === transferCharacteristic { logRequestWritten(error: error); return }
        guard characteristic === control, let f = inFlight, !f.awaitingChallenge else { return }
        let ms = loop.now - f.sentAt
        if case .att(let code)? = error { commandAnswered(CommandRejection(code) ?? .malformed) }
        if error == nil { commandAnswered(nil) }
        if case .att(let code)? = error, CommandRejection(code) == .staleChallenge, f.usedHeldChallenge, !f.retried {
            // The lock no longer holds the challenge read ahead (it restarted, or the link was
            // adopted anew): the same command once more, after a fresh read.
            emit(.phoneHeldChallengeRefused(op: .init(f.operation)))
            inFlight = nil
            commandTimer?.cancel()
            commandTimer = nil
            queue.insert(Queued(operation: f.operation, mode: f.mode, completion: f.completion, retried: true), at: 0)
            pump()
            return
        }
        defer {
            subscribeOnceInSession(peripheral)  // after the next command, if one waits
            readChallengeAhead(peripheral)      // for the next command, once nothing waits
            linkWentIdle()                      // if nothing else is under way
        }
        switch error {
        case nil:
            emit(.phoneCommandOk(op: .init(f.operation), ms: ms))
            if Self.movesTheBolt(f.operation) && settledReports == settledReportsAtWrite { awaitBoltReport() }
            // The next report at rest, not one that overtook this answer: the bolt may still
            // be on its way (PhoneAgent+Challenge).
            if Self.movesTheBolt(f.operation) { readAheadAwaitsTheBolt = true }
            finish(.success(()))
        case .att(let code)?:
            let why = CommandRejection(code) ?? .malformed
            emit(.phoneCommandRefused(op: .init(f.operation), reason: .init(why)))
            finish(.failure(.rejected(why)))
            if why == .unknownKey { lockSaidOurKeyIsRevoked() }
        case let e?:
            finish(.failure(.notDelivered("\(e)")))
        }
    }

    func emit(_ event: Event) {
        events.emit(AgentEvent(event, time: loop.now))
    }
}
