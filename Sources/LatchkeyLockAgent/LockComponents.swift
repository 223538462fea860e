import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySecurity
import LatchkeyTransport

/// The lock agent's components, built and wired to each other: what each tells the others
/// lives here, once, so that `LockAgent` only routes the manager's callbacks and the daemon's
/// calls to them. Each component owns its state; this holds only the references between them.
final class LockComponents {
    /// The wake-up work an accepted command holds until the controller is at rest again.
    static let commandTask = "command"

    let verifier: CommandVerifier
    /// The link→key bindings, preserved on the manager's restoration storage.
    let bindings: PreservedBindings
    private let controller: LockController
    private let log: any LockEventLog
    private let events: any AgentEventSink
    private let loop: any EventLoop

    /// Each lock event into the audit log, journald and the phones.
    private(set) var recorder: LockEventRecorder!
    /// The lock service, its advertising and the radio's power cycles.
    private(set) var published: PublishedService!
    /// Sessions, key bindings and the timers of links that prove nothing.
    private(set) var links: LinkRegistry<Central>!
    /// A link's life from its connection to its loss, and a key's end.
    private(set) var lifecycle: LinkLifecycle<Central>!
    /// The links that survived a relaunch, with their sessions and bindings.
    private(set) var relaunch: LinkRestoration<Central>!
    /// Ends what a key holds once it is no longer current.
    private(set) var keyWatch: KeyWatch!
    /// Refusals and lockouts in the audit log.
    private(set) var auditTrail: AuditTrail!
    /// The operating mode across restarts and an admin's change of it.
    private(set) var modeKeeper: OperatingModeKeeper!
    /// The pairing window, requests and their ends.
    private(set) var pairingDesk: PairingDesk!
    /// Departures, arrival credits and the arrival's relock.
    private(set) var arrivals: ArrivalTracker!
    /// Hands allowed commands to the controller and says what it decided.
    private(set) var pipeline: LockCommandPipeline!
    /// The bridge's commands, wrong codes and reads.
    private(set) var bridge: BridgeEntry!
    /// A phone's control writes, from the frame to the answer.
    private(set) var phoneCommands: PhoneCommands<Central>!
    /// The lock's state, read and notified to phones with a session.
    private(set) var status: StatusPublisher<Central>!
    /// The audit log's transfers to phones.
    private(set) var logTransfer: AuditLogTransfer<Central>!
    /// A link's reads and writes on the lock service.
    private(set) var requests: LockServiceRequests<Central>!
    /// What is at fault in the store, for `status`.
    private(set) var storeHealth: StoreHealth!

    init(peripheral: PeripheralManager, controller: LockController, keys: any KeyStore, log: any LockEventLog,
         events: any AgentEventSink, configuration: LockAgentConfiguration, outputClock: OutputChangeClock?,
         lockout: any LockoutStore, pairing: PairingResponder?, restoration: (any RestorationStorage)?,
         operatingModes: (any OperatingModeStore)?, backgroundTasks: BackgroundTasks) {
        let loop = peripheral.transport.loop
        self.controller = controller
        self.log = log
        self.events = events
        self.loop = loop
        let bindings = PreservedBindings(storage: restoration, emit: { event in
            events.emit(AgentEvent(event, time: loop.now))
        })
        let random = configuration.random
        let verifier = CommandVerifier(keys: keys, challenges: ChallengeIssuer(loop: loop, lifetime: configuration.challengeLifetime,
                                                                               random: { random.bytes(CommandFrame.challengeLength) }),
                                       lockout: LockoutGuard(store: lockout, policy: configuration.lockout, loop: loop),
                                       unauthenticatedFrameLimit: configuration.unauthenticatedFrameLimit)
        self.bindings = bindings
        self.verifier = verifier
        let emit: (Event) -> Void = { [weak self] in self?.emit($0) }
        let logSecurity: (LockEvent.Kind) -> Void = { [weak self] kind in
            guard let self else { return }
            recorder.record(securityEvent(kind))
        }
        recorder = LockEventRecorder(log: log, seen: { [weak self] in self?.arrivals.lockEvent($0) },
                                     recorded: { [weak self] in
                                         guard let self else { return }
                                         status.publish()
                                         if !controller.machine.isMoving { backgroundTasks.end(Self.commandTask) }
                                     }, emit: emit)
        published = PublishedService(peripheral: peripheral, definition: configuration.serviceDefinition,
                                     name: configuration.name, interval: configuration.advertisingInterval,
                                     maximumLinks: configuration.maximumLinks, beacon: { [weak self] in self?.pairingDesk.beacon },
                                     powerCycled: { [weak self] in self?.logAlarm(.lockRadioPowerCycled) }, emit: emit)
        links = LinkRegistry(loop: loop, unauthenticatedLinkTimeout: configuration.unauthenticatedLinkTimeout,
                             emit: emit, liveLinks: { [weak peripheral] in peripheral?.centrals ?? [] },
                             disconnect: { [weak peripheral] in peripheral?.disconnect($0) })
        lifecycle = LinkLifecycle(links: links, bindings: bindings, hooks: LinkLifecycleHooks<Central>(
            slotsChanged: { [weak self] in self?.published.advertiseWhileLinksAreFree() },
            forgetChallenge: { verifier.forget($0) },
            forgetPairing: { [weak self] in self?.pairingDesk.forget($0) },
            endTransfer: { [weak self] in self?.logTransfer.end($0) },
            linkEnded: { [weak self] in self?.arrivals.linkEnded($0, boundTo: $1) },
            keyEnded: { [weak self] in self?.arrivals.keyEnded($0) },
            phoneIsHere: { [weak self] in self?.arrivals.phoneIsHere(key: $0) },
            linkBound: { [weak self] in self?.keyWatch.linkBound() },
            subscribedToState: { [weak self] link in self?.published.stateSubscribers.contains { $0 === link } ?? false },
            tellState: { [weak self] in self?.status.tell($0) }), emit: emit)
        relaunch = LinkRestoration(links: links, bindings: bindings,
                                   secret: { keyID in
                                       guard verifier.authority.isCurrent(keyID: keyID) == true else { return nil }
                                       return verifier.keys.key(id: keyID)?.secret
                                   },
                                   rebind: { [weak self] in self?.lifecycle.rebind($0, to: $1) },
                                   linkBound: { [weak self] in self?.keyWatch.linkBound() }, emit: emit)
        keyWatch = KeyWatch(loop: loop, keysInUse: { [weak self] in self?.links.keysInUse ?? [] },
                            isCurrent: { verifier.authority.isCurrent(keyID: $0) },
                            ended: { [weak self] in self?.lifecycle.keyNoLongerCurrent($0) })
        auditTrail = AuditTrail(loop: loop, emit: emit, logSecurity: logSecurity)
        modeKeeper = OperatingModeKeeper(store: operatingModes, controller: controller, emit: emit, logSecurity: logSecurity,
                                         changed: { [weak self] in self?.status.publish() })
        pairingDesk = PairingDesk(responder: pairing, emit: emit, logSecurity: logSecurity,
                                  advertise: { [weak self] in self?.published.advertise() },
                                  notEnrolled: { [weak self] in self?.links.pairingNotEnrolled(key: $0) })
        arrivals = ArrivalTracker(loop: loop, policy: configuration.arrivalPolicy,
                                  departureGrace: configuration.departureGrace, lock: controller,
                                  emit: emit, logSecurity: logSecurity)
        pipeline = LockCommandPipeline(controller: controller, outputClock: outputClock, validity: configuration.challengeLifetime,
                                       commitStagedCounter: { try verifier.commitCounter() }, emit: emit)
        bridge = BridgeEntry(authority: verifier.authority, keys: keys, pipeline: pipeline, audit: auditTrail, emit: emit,
                             moving: { backgroundTasks.begin(Self.commandTask) })
        phoneCommands = PhoneCommands(loop: loop, verifier: verifier, links: links, audit: auditTrail,
                                      arrivals: arrivals, pipeline: pipeline, emit: emit,
                                      opened: { [weak self] in self?.lifecycle.adopt($0, on: $1) },
                                      bind: { [weak self] in self?.lifecycle.bind($0, to: $1) },
                                      setOperatingMode: { [weak self] raw, authorized in
                                          // Nil is the answer "done": an agent gone has done nothing.
                                          guard let self else { return .refusedByPolicy }
                                          return modeKeeper.set(raw, authorized: authorized)
                                      },
                                      moving: { backgroundTasks.begin(Self.commandTask) })
        status = StatusPublisher(links: links, frame: { [unowned self] in statusFrame },
                                 subscribers: { [weak self] in self?.published.stateSubscribers ?? [] },
                                 send: { [weak self] in self?.published.sendState($1, to: $0) ?? true }, emit: emit)
        logTransfer = AuditLogTransfer(log: log, loop: loop, emit: emit,
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
                                       pairing: { [weak self] in self?.pairingRequest($0, from: $1, configuration: configuration) },
                                       logScope: { verifier.authority.logScope(keyID: $0) },
                                       startTransfer: { [weak self] bytes, central, key, scope in
                                           guard let self else { return nil }
                                           return logTransfer.start(bytes, on: central, key: key, scope: scope,
                                                                    seal: { [weak self] in self?.links.seal($0, as: .logTransfer, for: central) })
                                       }, emit: emit)
        storeHealth = StoreHealth(journalAtFault: { controller.journalFault != nil || controller.unwrittenJournalEntries > 0 },
                                  lockoutAtFault: { verifier.lockout.storeFault != nil },
                                  bindingsAtFault: { bindings.fault != nil },
                                  writeAgain: { [weak self] in
                                      guard let self else { return }
                                      controller.writeBacklogNow()
                                      if bindings.fault != nil { bindings.preserveAgain(links.boundAddresses) }
                                  }, emit: emit)
        controller.onEvent = { [weak self] event in self?.recorder.record(event) }
        controller.onFault = { [weak self] fault in self?.emit(.lockFault(fault: "\(fault)")) }
        controller.onJournalCaughtUp = { [weak self] in self?.emit(.lockJournalCaughtUp) }
    }

    var statusFrame: LockStatusFrame {
        LockStatusFrame(lockState: controller.lockState.rawValue, doorState: controller.doorState.rawValue,
                        operatingMode: controller.operatingMode.rawValue, actuatorEnabled: controller.actuatorEnabled,
                        lastEventSequence: log.lastSequence)
    }

    /// An event about the lock's security that moves nothing: the states are as they are.
    private func securityEvent(_ kind: LockEvent.Kind) -> LockEvent {
        LockEvent(kind: kind, time: loop.now, lockStateBefore: controller.lockState,
                  lockStateAfter: controller.lockState, doorState: controller.doorState)
    }

    /// Appends a DoorLockAlarm to the log (and notifies it like any lock event).
    func logAlarm(_ code: AlarmCode) {
        recorder.record(securityEvent(.doorLockAlarm(code)))
    }

    /// A pairing write: its key waits for the owner's word, so the link may stay that long, and
    /// the phone opens a session once its key is enrolled; if it is not, it is timed as a stranger's.
    private func pairingRequest(_ bytes: [UInt8], from central: Central,
                                configuration: LockAgentConfiguration) -> CommandRejection? {
        switch pairingDesk.request(bytes, on: central.linkID, from: central.identifier) {
        case .failure(let why):
            return why
        case .success(let key):
            links.pairingWaits(on: central, key: key,
                               within: PairingResponder.confirmationTimeout + configuration.unauthenticatedLinkTimeout)
            return nil
        }
    }

    func emit(_ event: Event) {
        events.emit(AgentEvent(event, time: loop.now))
    }
}
