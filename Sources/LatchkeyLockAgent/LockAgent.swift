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

    var service: LocalService?
    var stateCharacteristic: LocalCharacteristic?
    var transferCharacteristic: LocalCharacteristic?
    /// The radio was on and went off: the next power-on is a power cycle (an alarm).
    var radioWentDown = false
    /// Requests the system refused since start (each asked again by the transport).
    public internal(set) var transportRefusals = 0
    /// The store is open read-only (LockAgent+StoreFaults.swift).
    public internal(set) var storeOpenReadOnly = false
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
        self.verifier = CommandVerifier(keys: keys, challenges: ChallengeIssuer(loop: transport.loop,
                                                                               lifetime: configuration.challengeLifetime),
                                        lockout: LockoutGuard(store: lockout, policy: configuration.lockout,
                                                              loop: transport.loop),
                                        unauthenticatedFrameLimit: configuration.unauthenticatedFrameLimit)
        peripheral.delegate = self
        links = LinkRegistry(loop: transport.loop, unauthenticatedLinkTimeout: configuration.unauthenticatedLinkTimeout,
                             emit: { [weak self] in self?.emit($0) },
                             liveLinks: { [weak self] in self?.peripheral.centrals ?? [] },
                             disconnect: { [weak self] in self?.peripheral.disconnect($0) })
        keyWatch = KeyWatch(loop: transport.loop, keysInUse: { [weak self] in self?.links.keysInUse ?? [] },
                            isCurrent: { [weak self] in self?.verifier.authority.isCurrent(keyID: $0) ?? nil },
                            ended: { [weak self] in self?.keyNoLongerCurrent($0) })
        auditTrail = AuditTrail(loop: transport.loop, emit: { [weak self] in self?.emit($0) },
                                logSecurity: { [weak self] kind in
                                    guard let self else { return }
                                    lockEvent(securityEvent(kind))
                                })
        modeKeeper = OperatingModeKeeper(store: operatingModes, controller: controller,
                                            emit: { [weak self] in self?.emit($0) },
                                            logSecurity: { [weak self] kind in
                                                guard let self else { return }
                                                lockEvent(securityEvent(kind))
                                            },
                                            changed: { [weak self] in self?.publishStatus() })
        pairingDesk = PairingDesk(responder: pairing, emit: { [weak self] in self?.emit($0) },
                                  logSecurity: { [weak self] kind in
                                      guard let self else { return }
                                      lockEvent(securityEvent(kind))
                                  },
                                  advertise: { [weak self] in self?.advertise() },
                                  notEnrolled: { [weak self] in self?.links.pairingNotEnrolled(key: $0) })
        arrivals = ArrivalTracker(loop: transport.loop, policy: configuration.arrivalPolicy,
                                  departureGrace: configuration.departureGrace, lock: controller,
                                  emit: { [weak self] in self?.emit($0) },
                                  logSecurity: { [weak self] kind in
                                      guard let self else { return }
                                      lockEvent(securityEvent(kind))
                                  })
        pipeline = LockCommandPipeline(controller: controller, outputClock: outputClock, validity: configuration.challengeLifetime,
                                   commitStagedCounter: { [verifier] in try verifier.commitCounter() },
                                   emit: { [weak self] in self?.emit($0) })
        bridge = BridgeEntry(authority: verifier.authority, keys: keys, pipeline: pipeline, audit: auditTrail,
                             emit: { [weak self] in self?.emit($0) },
                             moving: { [weak self] in self?.backgroundTasks.begin(Self.commandTask) })
        phoneCommands = PhoneCommands(loop: transport.loop, verifier: verifier, links: links, audit: auditTrail,
                                      arrivals: arrivals, pipeline: pipeline, emit: { [weak self] in self?.emit($0) },
                                      opened: { [weak self] in self?.adopt($0, on: $1) },
                                      bind: { [weak self] in self?.bind($0, to: $1) },
                                      setOperatingMode: { [weak self] raw, authorized in
                                          // Nil is the answer "done": an agent gone has done nothing.
                                          guard let self else { return .refusedByPolicy }
                                          return modeKeeper.set(raw, authorized: authorized)
                                      },
                                      moving: { [weak self] in self?.backgroundTasks.begin(Self.commandTask) })
        status = StatusPublisher(links: links, frame: { [unowned self] in statusFrame },
                                 subscribers: { [weak self] in self?.stateCharacteristic?.subscribedCentrals ?? [] },
                                 send: { [weak self] central, sealed in
                                     guard let self, let c = stateCharacteristic else { return true }
                                     return peripheral.updateValue(sealed, for: c, onSubscribedCentrals: [central])
                                 }, emit: { [weak self] in self?.emit($0) })
        logTransfer = AuditLogTransfer(log: log, loop: transport.loop, emit: { [weak self] in self?.emit($0) },
                                  subscribers: { [weak self] in self?.transferCharacteristic?.subscribedCentrals ?? [] },
                                  send: { [weak self] central, chunk in
                                      guard let self, let c = transferCharacteristic else { return false }
                                      return peripheral.updateValue(chunk, for: c, onSubscribedCentrals: [central])
                                  })
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
        controller.start(recovered: recovered, lastLogged: lastLoggedLockState())
        if let demoted { modeKeeper.logDemotion(from: demoted) }
        emit(.lockStarted(state: .init(controller.lockState), door: .init(controller.doorState)))
    }

    /// The lock state of the audit log's last event; nil for an empty log, and for one that
    /// cannot be read (said as a `lock.fault`: the start then logs no relock it cannot compare).
    func lastLoggedLockState() -> LockState? {
        let last = log.lastSequence
        guard last > 0 else { return nil }
        do {
            guard let entry = try log.events(from: last, limit: 1).first else { return nil }
            return try LockEvent(decoding: entry.bytes).lockStateAfter
        } catch {
            emit(.lockFault(fault: "reading the audit log's last event #\(last): \(error)"))
            return nil
        }
    }

    /// Called with each lock event once it is in the audit log (the runtime's alarm hook).
    public var onLogged: ((LockEvent) -> Void)?

    public var statusFrame: LockStatusFrame {
        LockStatusFrame(lockState: controller.lockState.rawValue, doorState: controller.doorState.rawValue,
                        operatingMode: controller.operatingMode.rawValue, actuatorEnabled: controller.actuatorEnabled,
                        lastEventSequence: log.lastSequence)
    }

    // MARK: Lock events

    func lockEvent(_ event: LockEvent) {
        arrivals.lockEvent(event)
        do { try log.append(event) } catch { emit(.lockLogFailed(error: "\(error)")) }
        onLogged?(event)
        // The key it concerns, when one does: journald's KEY_ID= (`AgentEvent.journaldEntry`, LatchkeyDaemons).
        emit(.lockEvent(kind: "\(event.kind)", state: .init(event.lockStateAfter), door: .init(event.doorState),
                        key: event.keyID?.rawValue))
        publishStatus()
        if !controller.machine.isMoving { backgroundTasks.end(Self.commandTask) }
    }

    /// Tells every subscribed phone with a session, sealed to it (LockAgent+Sessions.swift).
    func publishStatus() {
        status.publish()
    }

    // MARK: PeripheralManagerDelegate

    public func peripheralManagerDidUpdateState(_ pm: PeripheralManager) {
        emit(.lockRadio(state: .init(pm.state)))
        noteRadioState(pm.state)
        guard pm.state == .poweredOn else { return }
        if service == nil {
            do {
                let s = try pm.add(configuration.serviceDefinition)
                service = s
                stateCharacteristic = s.characteristic(LockServiceUUID.lockState)
                transferCharacteristic = s.characteristic(LockServiceUUID.dataTransfer)
            } catch {
                emit(.lockFault(fault: "cannot publish service: \(error)"))
                return
            }
        }
        advertise()
    }

    public func peripheralManagerDidStartAdvertising(_ pm: PeripheralManager, error: BluetoothError?) {
        emit(.lockAdvertising(error: error.map { "\($0)" }))
    }

    public func peripheralManager(_ pm: PeripheralManager, didConnect central: Central) {
        emit(.lockCentralConnected(central: "\(central.identifier)"))
        links.armUnauthenticatedTimer(for: central)
        advertiseWhileLinksAreFree()
        // An address proves nothing (anyone can send with a bound phone's): a phone's
        // departure timer is cancelled only by an authenticated command on the new link (`rebind`).
    }

    public func peripheralManager(_ pm: PeripheralManager, didDisconnect central: Central, reason: DisconnectReason) {
        emit(.lockCentralDisconnected(central: "\(central.identifier)", reason: "\(reason)"))
        let boundTo = links.linkEnded(central.linkID)
        verifier.forget(central.linkID)
        advertiseWhileLinksAreFree()
        pairingDesk.forget(central.linkID)
        logTransfer.end(central.linkID)
        arrivals.linkEnded(central.linkID, boundTo: boundTo)
    }

    public func peripheralManager(_ pm: PeripheralManager, didReceiveRead request: ReadRequest) -> Result<[UInt8], ATTErrorCode> {
        switch request.characteristic.uuid {
        case LockServiceUUID.lockState:
            return status.read(by: request.central)
        case LockServiceUUID.challenge:
            arrivals.challengeRead(on: request.central.linkID)
            return .success(verifier.challenges.issue(for: request.central.linkID).bytes)
        case LockServiceUUID.pairing:
            return pairingDesk.response(for: request.central.linkID).map { .success($0) } ?? .failure(.readNotPermitted)
        default:
            return .failure(.readNotPermitted)
        }
    }

    public func peripheralManager(_ pm: PeripheralManager, didReceiveWrite request: WriteRequest) -> ATTErrorCode? {
        switch request.characteristic.uuid {
        case LockServiceUUID.lockControl:
            guard request.withResponse else { return .writeNotPermitted }  // a command always gets an answer
            return phoneCommands.handle(request.value, from: request.central).map(\.attError)
        case LockServiceUUID.dataTransfer:
            return startTransfer(request.value, to: request.central)
        case LockServiceUUID.pairing:
            guard request.withResponse else { return .writeNotPermitted }
            return pairingRequest(request.value, from: request.central).map(\.attError)
        default:
            return .writeNotPermitted
        }
    }

    public func peripheralManagerIsReady(toUpdateSubscribers pm: PeripheralManager) {
        status.roomAgain()
        logTransfer.pump()
    }

    // MARK: Event log transfer

    private func startTransfer(_ bytes: [UInt8], to central: Central) -> ATTErrorCode? {
        // A malformed request is answered with its ATT error.
        guard let keyID = links.sessionKey(on: central.linkID) else {
            emit(.lockLogRefused(central: "\(central.identifier)", reason: "no session"))
            return CommandRejection.noSession.attError
        }
        // What the key may read is the authority's to say, on the key as it is now.
        guard let scope = verifier.authority.logScope(keyID: keyID) else {
            emit(.lockLogRefused(central: "\(central.identifier)", key: keyID, reason: "key revoked"))
            return CommandRejection.unknownKey.attError
        }
        return logTransfer.start(bytes, on: central, key: keyID, scope: scope,
                                 seal: { sealedLog($0, for: central) })
    }

    func emit(_ event: Event) {
        events.emit(AgentEvent(event, time: loop.now))
    }
}
