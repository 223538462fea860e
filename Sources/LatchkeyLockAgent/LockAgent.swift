import LatchkeyAgents
import LatchkeyATT
import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySecurity
import LatchkeyTransport

/// The peripheral agent: publishes the lock service, verifies sealed commands, applies the
/// lock's own rules, and hands decisions to the `LockController` (which journals each one
/// before the actuator moves). A link, by itself, never moves the lock.
public final class LockAgent: PeripheralManagerDelegate {
    public let configuration: LockAgentConfiguration
    public let peripheral: PeripheralManager
    public let controller: LockController
    let verifier: CommandVerifier
    /// The link→key bindings, preserved on the manager's restoration storage (`PreservedBindings`).
    let bindings: PreservedBindings
    let log: any LockEventLog
    let events: any AgentEventSink
    let outputClock: OutputChangeClock?
    var loop: any EventLoop { peripheral.transport.loop }

    /// The links that survived a relaunch, with their sessions and bindings (`LinkRestoration`).
    var relaunch: LinkRestoration<Central>!
    /// Each lock event into the audit log, journald and the phones (`LockEventRecorder`).
    var recorder: LockEventRecorder!
    /// The lock service, its advertising and the radio's power cycles (`PublishedService`).
    var published: PublishedService!
    /// Requests the system refused since start (each asked again by the transport).
    public internal(set) var transportRefusals = 0
    /// What is at fault in the store, for `status` (`StoreHealth`).
    var storeHealth: StoreHealth!
    /// The lock's state, read and notified to phones with a session (`StatusPublisher`).
    var status: StatusPublisher<Central>!
    /// The audit log's transfers to phones (`AuditLogTransfer`).
    var logTransfer: AuditLogTransfer<Central>!
    /// Sessions, key bindings and the timers of links that prove nothing (`LinkRegistry`).
    var links: LinkRegistry<Central>!

    /// Ends what a key holds once it is no longer current (LockAgent+Revocation.swift).
    var keyWatch: KeyWatch!
    /// The operating mode across restarts and an admin's change of it (`OperatingModeKeeper`).
    var modeKeeper: OperatingModeKeeper!
    /// The pairing window, requests and their ends (`PairingDesk`).
    var pairingDesk: PairingDesk!
    /// Refusals and lockouts in the audit log (`AuditTrail`).
    var auditTrail: AuditTrail!
    /// Departures, arrival credits and the arrival's relock (`ArrivalTracker`).
    var arrivals: ArrivalTracker!

    /// Hands allowed commands to the controller and says what it decided (`LockCommandPipeline`).
    var pipeline: LockCommandPipeline!
    /// A phone's control writes, from the frame to the answer (`PhoneCommands`).
    var phoneCommands: PhoneCommands<Central>!
    /// A link's reads and writes on the lock service (`LockServiceRequests`).
    var requests: LockServiceRequests<Central>!
    /// The bridge's commands, wrong codes and reads (`BridgeEntry`).
    var bridge: BridgeEntry!
    /// Software-path latencies (command received → actuator line changed), in ms.
    public var commandLatencies: [Double] { pipeline.commandLatencies }
    /// The wake-up work this agent marks: an accepted command until the controller is at
    /// rest again (decision journalled, actuator moved, outcome journalled, logged and
    /// notified), so that a background wake-up for the write is timed to its end.
    /// The runtime attaches the application gate.
    public let backgroundTasks = BackgroundTasks()
    static let commandTask = "command"

    /// `lockout` keeps the failed-attempt counts: the daemon passes the SQLite store (the
    /// in-memory default is for tests; docs/LOCK-RULES.md rule 5 wants them to survive restarts).
    public init(transport: any BluetoothTransport, controller: LockController, keys: any KeyStore,
                log: any LockEventLog, events: any AgentEventSink, configuration: LockAgentConfiguration = .init(),
                outputClock: OutputChangeClock? = nil, lockout: any LockoutStore = InMemoryLockoutStore(),
                pairing: PairingResponder? = nil, restoration: (any RestorationStorage)? = nil,
                operatingModes: (any OperatingModeStore)? = nil) {
        self.configuration = configuration
        self.controller = controller
        self.log = log
        self.events = events
        self.outputClock = outputClock
        self.bindings = PreservedBindings(storage: restoration, emit: { event in
            events.emit(AgentEvent(event, time: transport.loop.now))
        })
        // The Generic Access service names the lock as it advertises itself, and says it is a
        // door lock (Appearance 0x0708), for the Bluetooth settings of the phones around it.
        self.peripheral = PeripheralManager(transport: transport, options: ManagerOptions(
            restoreIdentifier: configuration.restoreIdentifier, restorationStorage: restoration),
            genericAccess: GenericAccess(deviceName: configuration.name, appearance: .doorLock))
        let random = configuration.random
        self.verifier = CommandVerifier(keys: keys, challenges: ChallengeIssuer(loop: transport.loop,
                                                                               lifetime: configuration.challengeLifetime,
                                                                               random: { random.bytes(CommandFrame.challengeLength) }),
                                        lockout: LockoutGuard(store: lockout, policy: configuration.lockout,
                                                              loop: transport.loop),
                                        unauthenticatedFrameLimit: configuration.unauthenticatedFrameLimit)
        peripheral.delegate = self
        let emit: (Event) -> Void = { [weak self] in self?.emit($0) }
        let logSecurity: (LockEvent.Kind) -> Void = { [weak self] kind in
            guard let self else { return }
            lockEvent(securityEvent(kind))
        }
        recorder = LockEventRecorder(log: log, seen: { [weak self] in self?.arrivals.lockEvent($0) },
                                     recorded: { [weak self] in
                                         guard let self else { return }
                                         publishStatus()
                                         if !controller.machine.isMoving { backgroundTasks.end(Self.commandTask) }
                                     }, emit: emit)
        published = PublishedService(peripheral: peripheral, definition: configuration.serviceDefinition,
                                     name: configuration.name, interval: configuration.advertisingInterval,
                                     maximumLinks: configuration.maximumLinks, beacon: { [weak self] in self?.pairingDesk.beacon },
                                     powerCycled: { [weak self] in self?.logAlarm(.lockRadioPowerCycled) }, emit: emit)
        links = LinkRegistry(loop: transport.loop, unauthenticatedLinkTimeout: configuration.unauthenticatedLinkTimeout,
                             emit: emit, liveLinks: { [weak self] in self?.peripheral.centrals ?? [] },
                             disconnect: { [weak self] in self?.peripheral.disconnect($0) })
        relaunch = LinkRestoration(links: links, bindings: bindings,
                                   secret: { [verifier] keyID in
                                       guard verifier.authority.isCurrent(keyID: keyID) == true else { return nil }
                                       return verifier.keys.key(id: keyID)?.secret
                                   },
                                   rebind: { [weak self] in self?.rebind($0, to: $1) },
                                   linkBound: { [weak self] in self?.keyWatch.linkBound() }, emit: emit)
        keyWatch = KeyWatch(loop: transport.loop, keysInUse: { [weak self] in self?.links.keysInUse ?? [] },
                            isCurrent: { [weak self] in self?.verifier.authority.isCurrent(keyID: $0) ?? nil },
                            ended: { [weak self] in self?.keyNoLongerCurrent($0) })
        auditTrail = AuditTrail(loop: transport.loop, emit: emit, logSecurity: logSecurity)
        modeKeeper = OperatingModeKeeper(store: operatingModes, controller: controller, emit: emit, logSecurity: logSecurity,
                                         changed: { [weak self] in self?.publishStatus() })
        pairingDesk = PairingDesk(responder: pairing, emit: emit, logSecurity: logSecurity,
                                  advertise: { [weak self] in self?.published.advertise() },
                                  notEnrolled: { [weak self] in self?.links.pairingNotEnrolled(key: $0) })
        arrivals = ArrivalTracker(loop: transport.loop, policy: configuration.arrivalPolicy,
                                  departureGrace: configuration.departureGrace, lock: controller,
                                  emit: emit, logSecurity: logSecurity)
        pipeline = LockCommandPipeline(controller: controller, outputClock: outputClock, validity: configuration.challengeLifetime,
                                   commitStagedCounter: { [verifier] in try verifier.commitCounter() }, emit: emit)
        bridge = BridgeEntry(authority: verifier.authority, keys: keys, pipeline: pipeline, audit: auditTrail, emit: emit,
                             moving: { [weak self] in self?.backgroundTasks.begin(Self.commandTask) })
        phoneCommands = PhoneCommands(loop: transport.loop, verifier: verifier, links: links, audit: auditTrail,
                                      arrivals: arrivals, pipeline: pipeline, emit: emit,
                                      opened: { [weak self] in self?.adopt($0, on: $1) },
                                      bind: { [weak self] in self?.bind($0, to: $1) },
                                      setOperatingMode: { [weak self] raw, authorized in
                                          // Nil is the answer "done": an agent gone has done nothing.
                                          guard let self else { return .refusedByPolicy }
                                          return modeKeeper.set(raw, authorized: authorized)
                                      },
                                      moving: { [weak self] in self?.backgroundTasks.begin(Self.commandTask) })
        status = StatusPublisher(links: links, frame: { [unowned self] in statusFrame },
                                 subscribers: { [weak self] in self?.published.stateSubscribers ?? [] },
                                 send: { [weak self] in self?.published.sendState($1, to: $0) ?? true }, emit: emit)
        logTransfer = AuditLogTransfer(log: log, loop: transport.loop, emit: emit,
                                  subscribers: { [weak self] in self?.published.transferSubscribers ?? [] },
                                  send: { [weak self] in self?.published.sendTransfer($1, to: $0) ?? false })
        requests = LockServiceRequests(links: links, readState: { [weak self] in self?.status.read(by: $0) ?? .failure(.readNotPermitted) },
                                       challenge: { [weak self] central in
                                           guard let self else { return [] }
                                           arrivals.challengeRead(on: central.linkID)
                                           return verifier.challenges.issue(for: central.linkID).bytes
                                       },
                                       pairingResponse: { [weak self] in self?.pairingDesk.response(for: $0) },
                                       command: { [weak self] in self?.phoneCommands.handle($0, from: $1) },
                                       pairing: { [weak self] in self?.pairingRequest($0, from: $1) },
                                       logScope: { [verifier] in verifier.authority.logScope(keyID: $0) },
                                       startTransfer: { [weak self] bytes, central, key, scope in
                                           guard let self else { return nil }
                                           return logTransfer.start(bytes, on: central, key: key, scope: scope,
                                                                    seal: { self.sealedLog($0, for: central) })
                                       }, emit: emit)
        storeHealth = StoreHealth(journalAtFault: { controller.journalFault != nil || controller.unwrittenJournalEntries > 0 },
                                  lockoutAtFault: { [verifier] in verifier.lockout.storeFault != nil },
                                  bindingsAtFault: { [bindings] in bindings.fault != nil },
                                  writeAgain: { [weak self] in
                                      guard let self else { return }
                                      controller.writeBacklogNow()
                                      if bindings.fault != nil { bindings.preserveAgain(links.boundAddresses) }
                                  }, emit: emit)
        controller.onEvent = { [weak self] event in self?.lockEvent(event) }
        controller.onFault = { [weak self] fault in self?.emit(.lockFault(fault: "\(fault)")) }
        controller.onJournalCaughtUp = { [weak self] in self?.emit(.lockJournalCaughtUp) }
    }

    /// Reads the sensors and reconciles with the interrupted decision (if any), then publishes.
    public func start(recovered: LockDecision?) {
        if let recovered {
            emit(.lockRecovering(decision: recovered.id.rawValue, operation: .init(recovered.operation)))
        }
        let demoted = modeKeeper.restoreAtStart()
        controller.start(recovered: recovered, lastLogged: recorder.lastLoggedLockState())
        if let demoted { modeKeeper.logDemotion(from: demoted) }
        emit(.lockStarted(state: .init(controller.lockState), door: .init(controller.doorState)))
    }

    /// Called with each lock event once it is in the audit log (the runtime's alarm hook).
    public var onLogged: ((LockEvent) -> Void)? {
        get { recorder.onLogged }
        set { recorder.onLogged = newValue }
    }

    public var statusFrame: LockStatusFrame {
        LockStatusFrame(lockState: controller.lockState.rawValue, doorState: controller.doorState.rawValue,
                        operatingMode: controller.operatingMode.rawValue, actuatorEnabled: controller.actuatorEnabled,
                        lastEventSequence: log.lastSequence)
    }

    // MARK: Lock events

    func lockEvent(_ event: LockEvent) { recorder.record(event) }

    /// Tells every subscribed phone with a session, sealed to it (LockAgent+Sessions.swift).
    func publishStatus() {
        status.publish()
    }

    // MARK: PeripheralManagerDelegate

    public func peripheralManagerDidUpdateState(_ pm: PeripheralManager) {
        emit(.lockRadio(state: .init(pm.state)))
        published.radioChanged()
    }

    public func peripheralManagerDidStartAdvertising(_ pm: PeripheralManager, error: BluetoothError?) {
        emit(.lockAdvertising(error: error.map { "\($0)" }))
    }

    public func peripheralManager(_ pm: PeripheralManager, didConnect central: Central) {
        emit(.lockCentralConnected(central: "\(central.identifier)"))
        links.armUnauthenticatedTimer(for: central)
        published.advertiseWhileLinksAreFree()
        // An address proves nothing (anyone can send with a bound phone's): a phone's
        // departure timer is cancelled only by an authenticated command on the new link (`rebind`).
    }

    public func peripheralManager(_ pm: PeripheralManager, didDisconnect central: Central, reason: DisconnectReason) {
        emit(.lockCentralDisconnected(central: "\(central.identifier)", reason: "\(reason)"))
        let boundTo = links.linkEnded(central.linkID)
        verifier.forget(central.linkID)
        published.advertiseWhileLinksAreFree()
        pairingDesk.forget(central.linkID)
        logTransfer.end(central.linkID)
        arrivals.linkEnded(central.linkID, boundTo: boundTo)
    }

    public func peripheralManager(_ pm: PeripheralManager, didReceiveRead request: ReadRequest) -> Result<[UInt8], ATTErrorCode> {
        requests.read(request.characteristic.uuid, by: request.central)
    }

    public func peripheralManager(_ pm: PeripheralManager, didReceiveWrite request: WriteRequest) -> ATTErrorCode? {
        requests.write(request.value, to: request.characteristic.uuid, withResponse: request.withResponse, by: request.central)
    }

    public func peripheralManagerIsReady(toUpdateSubscribers pm: PeripheralManager) {
        status.roomAgain()
        logTransfer.pump()
    }

    func emit(_ event: Event) {
        events.emit(AgentEvent(event, time: loop.now))
    }
}
