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

public struct LockAgentConfiguration: Sendable {
    /// The lock's name: its advertised local name and its Generic Access Device Name.
    public var name: String
    /// 152.5 ms: the first of Apple's recommended slow advertising intervals (accessory
    /// design guidelines), quick enough for a returning phone to re-link within a second.
    public var advertisingInterval: Duration
    /// How long a phone that authenticated may stay gone before the lock locks behind its
    /// owner. Matches the phone's own grace period by default.
    public var departureGrace: Duration
    public var challengeLifetime: Duration
    public var arrivalPolicy: ArrivalPolicy
    /// Failed-attempt limits and disable times (docs/SECURITY.md, "Lockout").
    public var lockout: LockoutPolicy
    /// The peripheral manager's restore identifier: advertising, the service's handles
    /// and the subscribed centrals are preserved under it when the agent has a storage.
    public var restoreIdentifier: String
    /// The service this version publishes. A relaunch that finds another one preserved
    /// replaces it, and phones on links that survived are sent Service Changed.
    public var serviceDefinition: GATTService
    /// A link that has not proven a key by then (a session, or a pairing) is dropped, so an
    /// idle stranger cannot hold the lock's attention. A phone needs about 100 ms.
    public var unauthenticatedLinkTimeout: Duration
    /// Frames failing before their tag (malformed, stale challenge, forged) a link may send;
    /// the one that reaches the limit drops the link. They never count against a key.
    public var unauthenticatedFrameLimit: Int
    /// Links the lock takes at once: it keeps advertising while fewer are up (where the
    /// controller can advertise beside a link), so one linked central never hides it.
    public var maximumLinks: Int

    /// 5 s: a phone's whole setup and first command is ten or so ATT round trips, about a
    /// second at the kernel's longest default connection interval (50 ms); five leave room
    /// for a slow phone and still free the link quickly.
    public static let defaultUnauthenticatedLinkTimeout: Duration = .seconds(5)
    public static let defaultRestoreIdentifier = "latchkey.lock.peripheral"

    public init(name: String = "Latchkey", advertisingInterval: Duration = .microseconds(152_500),
                departureGrace: Duration = .seconds(30), challengeLifetime: Duration = ChallengeIssuer.defaultLifetime,
                arrivalPolicy: ArrivalPolicy = ArrivalPolicy(), lockout: LockoutPolicy = LockoutPolicy(),
                restoreIdentifier: String = LockAgentConfiguration.defaultRestoreIdentifier,
                serviceDefinition: GATTService = LockServiceDefinition.service,
                unauthenticatedLinkTimeout: Duration = LockAgentConfiguration.defaultUnauthenticatedLinkTimeout,
                unauthenticatedFrameLimit: Int = CommandVerifier.defaultUnauthenticatedFrameLimit,
                maximumLinks: Int = 4) {
        self.name = name; self.advertisingInterval = advertisingInterval; self.departureGrace = departureGrace
        self.challengeLifetime = challengeLifetime; self.arrivalPolicy = arrivalPolicy; self.lockout = lockout
        self.restoreIdentifier = restoreIdentifier; self.serviceDefinition = serviceDefinition
        self.unauthenticatedLinkTimeout = unauthenticatedLinkTimeout
        self.unauthenticatedFrameLimit = unauthenticatedFrameLimit
        self.maximumLinks = max(1, maximumLinks)
    }
}

/// The peripheral agent: publishes the lock service, verifies sealed commands, applies the
/// lock's own rules, and hands decisions to the `LockController` (which journals each one
/// before the actuator moves). A link, by itself, never moves the lock.
public final class LockAgent: PeripheralManagerDelegate {
    public let configuration: LockAgentConfiguration
    public let peripheral: PeripheralManager
    public let controller: LockController
    let verifier: CommandVerifier
    /// Where the link→key bindings are preserved (the manager's restoration storage).
    let bindingStorage: (any RestorationStorage)?
    /// Nil when this lock was started without pairing (every pairing write is refused).
    let pairing: PairingResponder?
    let log: any LockEventLog
    /// Where the operating mode survives restarts; nil: it starts Normal every time.
    let operatingModes: (any OperatingModeStore)?
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
    /// Why the link→key bindings could not be read or saved, until they can.
    var bindingsFault: String?
    /// The store is open read-only (LockAgent+StoreFaults.swift).
    public internal(set) var storeOpenReadOnly = false
    var statusDirty = false
    var transfers: [LinkID: ChunkedSender] = [:]
    /// Each link's session, once its phone proved its key on it (LockAgent+Sessions.swift).
    var sessions: [LinkID: LinkSession] = [:]
    /// Links that have not proven a key yet, and when they will be dropped.
    var unauthenticatedTimers: [LinkID: Scheduled] = [:]
    /// Links being dropped (LockAgent+Sessions.swift).
    var droppingLinks: Set<LinkID> = []

    /// Ends what a key holds once it is no longer current (LockAgent+Revocation.swift).
    var keyWatch: KeyWatch!
    /// Paces audit entries that count for no key (LockAgent+Security.swift).
    var auditPacer = RefusalAuditPacer()
    /// Links whose pairing write was accepted, and the key each waits to have enrolled.
    var pairingLinks: [LinkID: UInt32] = [:]

    // Arrival and departure bookkeeping.
    var keyOfLink: [LinkID: UInt32] = [:]
    var addressOfKey: [UInt32: BluetoothAddress] = [:]
    var departureTimers: [UInt32: Scheduled] = [:]
    /// Keys whose phone this lock saw depart (link gone for the grace) since their last
    /// arrival request or bolt command: only they may ask for one (`LockAgent+Arrival`), and
    /// only until `departureCreditAfterReturn` after the key's first authenticated command
    /// since (the value; nil until that command). Not persisted: after a restart an arrival
    /// waits for a departure seen afresh (the cautious reading).
    var departuresSeen: [UInt32: Instant?] = [:]
    /// When the challenge now live on each link was read: the arrival's relay bound.
    var challengeReadAt: [LinkID: Instant] = [:]
    /// Relocks after an arrival unlock unless the door opens first.
    var arrivalRelockTimer: Scheduled?
    var lastManualUnlock: Instant?
    var lastArrival: (key: UInt32, at: Instant)?

    /// Software-path latencies (command received → actuator line changed), in ms.
    public private(set) var commandLatencies: [Double] = []
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
        self.operatingModes = operatingModes
        self.events = events
        self.outputClock = outputClock
        self.pairing = pairing
        self.bindingStorage = restoration
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
        keyWatch = KeyWatch(loop: transport.loop, keysInUse: { [weak self] in self?.keysInUse ?? [] },
                            isCurrent: { [weak self] in self?.verifier.authority.isCurrent(keyID: $0) ?? nil },
                            ended: { [weak self] in self?.keyNoLongerCurrent($0) })
        controller.onEvent = { [weak self] event in self?.lockEvent(event) }
        controller.onFault = { [weak self] fault in self?.emit(.lockFault(fault: "\(fault)")) }
        controller.onJournalCaughtUp = { [weak self] in self?.emit(.lockJournalCaughtUp) }
    }

    /// Reads the sensors and reconciles with the interrupted decision (if any), then publishes.
    public func start(recovered: LockDecision?) {
        if let recovered {
            emit(.lockRecovering(decision: recovered.id.rawValue, operation: .init(recovered.operation)))
        }
        let demoted = restoreOperatingMode()
        controller.start(recovered: recovered, lastLogged: lastLoggedLockState())
        if let demoted { logOperatingModeDemotion(from: demoted) }
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
        doorMovedAfterArrival(event)
        do { try log.append(event) } catch { emit(.lockLogFailed(error: "\(error)")) }
        onLogged?(event)
        if case .lockOperation(let r) = event.kind, r.operation == .unlock, r.source == .manual || r.source == .button {
            lastManualUnlock = event.time
        }
        // The key it concerns, when one does: journald's KEY_ID= (`AgentEvent.journaldEntry`, LatchkeyDaemons).
        emit(.lockEvent(kind: "\(event.kind)", state: .init(event.lockStateAfter), door: .init(event.doorState),
                        key: event.keyID?.rawValue))
        publishStatus()
        if !controller.machine.isMoving { backgroundTasks.end(Self.commandTask) }
    }

    /// Tells every subscribed phone with a session, sealed to it (LockAgent+Sessions.swift).
    func publishStatus() {
        statusDirty = !notifyStatus()
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
        armUnauthenticatedTimer(for: central)
        advertiseWhileLinksAreFree()
        // An address proves nothing (anyone can send with a bound phone's): a phone's
        // departure timer is cancelled only by an authenticated command on the new link (`rebind`).
    }

    public func peripheralManager(_ pm: PeripheralManager, didDisconnect central: Central, reason: DisconnectReason) {
        emit(.lockCentralDisconnected(central: "\(central.identifier)", reason: "\(reason)"))
        linkEnded(central)
        advertiseWhileLinksAreFree()
        challengeReadAt[central.linkID] = nil
        pairingLinks[central.linkID] = nil
        pairing?.forget(central.linkID)
        transfers[central.linkID] = nil
        guard let key = keyOfLink.removeValue(forKey: central.linkID) else { return }
        departureTimers[key]?.cancel()
        departureTimers[key] = loop.schedule(after: configuration.departureGrace) { [weak self] in
            self?.departed(key)
        }
    }

    /// The phone holding `key` has been gone for the grace period: lock behind its owner.
    private func departed(_ key: UInt32) {
        departureTimers[key] = nil
        departuresSeen[key] = .some(nil)
        emit(.lockDeparture(key: key))
        guard controller.lockState != .locked else { return }
        controller.lockAutomatically(for: KeyID(key))
    }

    public func peripheralManager(_ pm: PeripheralManager, didReceiveRead request: ReadRequest) -> Result<[UInt8], ATTErrorCode> {
        switch request.characteristic.uuid {
        case LockServiceUUID.lockState:
            return readStatus(by: request.central)
        case LockServiceUUID.challenge:
            challengeReadAt[request.central.linkID] = loop.now
            return .success(verifier.challenges.issue(for: request.central.linkID).bytes)
        case LockServiceUUID.pairing:
            return pairing?.response(for: request.central.linkID).map { .success($0) } ?? .failure(.readNotPermitted)
        default:
            return .failure(.readNotPermitted)
        }
    }

    public func peripheralManager(_ pm: PeripheralManager, didReceiveWrite request: WriteRequest) -> ATTErrorCode? {
        switch request.characteristic.uuid {
        case LockServiceUUID.lockControl:
            guard request.withResponse else { return .writeNotPermitted }  // a command always gets an answer
            return command(request.value, from: request.central).map(\.attError)
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
        if statusDirty { publishStatus() }
        pumpTransfers()
    }

    // MARK: Commands

    /// Verifies, filters and submits one control write. Nil means accepted (decided and
    /// journalled; the actuator is moving or already at the target).
    private func command(_ bytes: [UInt8], from central: Central) -> CommandRejection? {
        let received = loop.now
        let result = verifier.verify(bytes, on: central.linkID)
        adopt(result.session, on: central)
        switch result {
        case .failure(let failure):
            emit(.lockCommandRejected(central: "\(central.identifier)", reason: .init(failure.rejection)))
            let dropNow = failure.dropLink && !droppingLinks.contains(central.linkID)
            if failure.counted || failure.revoked || dropNow { audit(failure) }
            if dropNow { drop(central, because: "\(verifier.unauthenticatedFrameLimit) unauthenticated frames") }
            return failure.rejection
        case .success(let verified):
            let answer = carryOut(verified, from: central, received: received)
            // Whatever path it took, the counter is durable before the phone hears back.
            return commitCounter(key: verified.key.id) ?? answer
        }
    }

    /// Makes the verified command's counter durable unless a write of the lock's records
    /// already carried it (the decision: `DecisionJournal.record(_:committing:)`; the event of
    /// a refusal). Runs before any other durable effect of the command and before its answer;
    /// a failure answers `storageFailure`.
    func commitCounter(key: UInt32) -> CommandRejection? {
        do { try verifier.commitCounter() } catch {
            emit(.lockCommandRefused(key: key, error: "counter not stored: \(error)"))
            return .storageFailure
        }
        return nil
    }

    /// An accepted lock's counter, made durable if its decision did not carry it. A store
    /// that refuses it (full, read-only) does not turn the lock into a refusal: the bolt is
    /// moving (locking is safe), so the phone is told what happened — done. The counter
    /// stays in memory, where the verifier counts it (no replay in this run; after a restart
    /// the frame's single-use, link-bound challenge is gone), and is written with the
    /// journal's backlog when the store takes writes again.
    private func commitLockCounter(key: UInt32) {
        do { try verifier.commitCounter() } catch {
            emit(.lockCounterWriteFailed(key: key, error: "\(error)", held: "until the store takes writes"))
            controller.writeHeldLater()
        }
    }

    private func carryOut(_ verified: VerifiedCommand, from central: Central, received: Instant) -> CommandRejection? {
        let key = verified.key.id
        let op = verified.body.operation
        spendOrTimeDepartureCredit(key: key, operation: op, at: received)
        let credit = departuresSeen[key]  // an arrival's, kept for a busy bolt below
        if op == .arrivalUnlock, let refusal = arrivalRefusal(key: key, on: central, received: received) {
            emit(.lockArrivalRefused(key: key, reason: .init(refusal)))
            auditUnexpectedArrival(refusal, key: key)
            return .refusedByPolicy
        }
        let relockAfter = Duration.seconds(Int(verified.body.timeoutSeconds ?? 1))
        switch op {
        case .lock, .unlock, .arrivalUnlock, .unlockWithTimeout: break
        case .present:
            // Authenticates the link for the departure rule; never moves the lock.
            if let failed = commitCounter(key: key) { return failed }
            bind(central, to: key)
            emit(.lockPhonePresent(key: key, central: "\(central.identifier)"))
            return nil
        case .setOperatingMode:
            if let failed = commitCounter(key: key) { return failed }
            return setOperatingMode(verified.body.operatingMode, authorized: verified.authorization)
        }
        let changesBefore = outputClock?.changeCount ?? 0
        let decidedBefore = controller.lastRecordedDecision
        // The counter-with-decision rule: the store commits the key's counter with the decision (one fsync).
        if let error = controller.submit(verified.authorization,
                                         counter: KeyCounter(keyID: key, counter: verified.counter),
                                         validUntil: received + configuration.challengeLifetime, relockAfter: relockAfter) {
            emit(.lockCommandRefused(key: key, op: .init(op), error: "\(error)"))
            // A moving bolt decided nothing: the phone asks once more after it, on the same departure.
            if op == .arrivalUnlock && error == .busy, let credit { departuresSeen[key] = credit }
            return rejection(for: error)
        }
        // Accepted. Remember who is here (for departure) and measure our own path.
        if op == .lock { commitLockCounter(key: key) }  // the bolt moves whatever the store says
        else if let failed = commitCounter(key: key) { return failed }  // committed with the decision: nothing left
        // The movement's outcome arrives later as an event (`lockEvent`): wake work until then.
        if controller.machine.isMoving { backgroundTasks.begin(Self.commandTask) }
        bind(central, to: key)
        if op == .arrivalUnlock { arrivalAccepted(key: key, at: received) }
        var actuatorMs: Duration?
        if let clock = outputClock, clock.changeCount > changesBefore, let changed = clock.lastChange {
            let ms = (changed - received).milliseconds
            commandLatencies.append(ms)
            actuatorMs = changed - received
        }
        var decision: DecisionNumber?, durableMs: Duration?
        if let decided = controller.lastRecordedDecision, decided != decidedBefore {
            decision = .number(decided.rawValue)  // durable before this line
            // The part of actuator_ms the disk took to make the decision durable.
            durableMs = controller.lastRecordDuration
        }
        emit(.lockCommandAccepted(key: key, op: .init(op), counter: verified.counter, actuatorMs: actuatorMs,
                                  decision: decision, durableMs: durableMs))
        return nil
    }

    /// This link belongs to the phone holding `key`: its loss starts the departure grace.
    func bind(_ central: Central, to key: UInt32) {
        rebind(central, to: key)
        preserveBinding(central.identifier, key: key)
    }

    func rebind(_ central: Central, to key: UInt32) {
        keyOfLink[central.linkID] = key
        addressOfKey[key] = central.identifier
        keyWatch.linkBound()
        if let t = departureTimers.removeValue(forKey: key) {
            t.cancel()
            emit(.lockDepartureCancelled(key: key))
        }
    }

    private func rejection(for error: OperationError) -> CommandRejection {
        switch error {
        case .jammed, .hardwareFault: .actuatorDisabled
        case .journalFailed: .storageFailure
        case .invalidCredential, .disabledUserDenied: .notAuthorized
        case .busy: .busy  // the phone may ask again once the bolt stops (an arrival does, once)
        case .unspecified, .restricted, .insufficientBattery, .doorOpen, .notReady, .interrupted, .pairingNotConfirmed,
             .arrivalNotExpected:
            .refusedByPolicy
        }
    }

    // MARK: Event log transfer

    private func startTransfer(_ bytes: [UInt8], to central: Central) -> ATTErrorCode? {
        // A malformed request is answered with its ATT error.
        guard let session = sessions[central.linkID] else {
            emit(.lockLogRefused(central: "\(central.identifier)", reason: "no session"))
            return CommandRejection.noSession.attError
        }
        // What the key may read is the authority's to say, on the key as it is now.
        guard let scope = verifier.authority.logScope(keyID: session.keyID) else {
            emit(.lockLogRefused(central: "\(central.identifier)", key: session.keyID, reason: "key revoked"))
            return CommandRejection.unknownKey.attError
        }
        guard let request = try? LogRequest(decoding: bytes) else { return .invalidAttributeValueLength }
        guard let c = transferCharacteristic, c.subscribedCentrals.contains(where: { $0 === central }) else {
            return .cccdImproperlyConfigured
        }
        let rows: [(sequence: UInt32, bytes: [UInt8])]
        do { rows = try readableEvents(from: request.fromSequence, limit: Int(request.maximumCount), scope: scope,
                                       key: session.keyID) } catch {
            return .unlikelyError
        }
        var payload: [UInt8] = []
        for r in rows {
            // What does not fit one sealed reply waits for the next request.
            guard payload.count + 5 + r.bytes.count <= SealedReply.maximumPayloadLength else { break }
            LogTransferRecord.append(sequence: r.sequence, event: r.bytes, to: &payload)
        }
        guard let sealed = sealedLog(payload, for: central) else { return CommandRejection.noSession.attError }
        transfers[central.linkID] = ChunkedSender(value: sealed, mtu: central.maximumUpdateValueLength + 3)
        emit(.lockLogTransfer(central: "\(central.identifier)", events: rows.count))
        loop.execute { [weak self] in self?.pumpTransfers() }
        return nil
    }

    /// Up to `limit` events from `fromSequence` that `scope` lets the key read: the whole
    /// household's for an admin key, only those naming the key for anyone else (a guest learns
    /// nothing of who else comes and goes). The sequence numbers stay, so a phone pages on from
    /// the last one it got; the scan stops at the log's end.
    private func readableEvents(from fromSequence: UInt32, limit: Int, scope: LogScope,
                                key: UInt32) throws -> [(sequence: UInt32, bytes: [UInt8])] {
        guard scope == .ownEvents else { return try log.events(from: fromSequence, limit: limit) }
        var found: [(sequence: UInt32, bytes: [UInt8])] = []
        var next = fromSequence
        while found.count < limit {
            let page = try log.events(from: next, limit: 200)
            guard let last = page.last else { break }
            // An event that does not decode cannot be shown to name this key: it is not sent.
            for row in page where (try? LockEvent(decoding: row.bytes))?.keyID == KeyID(key) {
                found.append(row)
                if found.count == limit { break }
            }
            next = last.sequence + 1
        }
        return found
    }

    private func pumpTransfers() {
        guard let c = transferCharacteristic else { return }
        for central in c.subscribedCentrals {
            while var sender = transfers[central.linkID], let chunk = sender.peek() {
                guard peripheral.updateValue(chunk, for: c, onSubscribedCentrals: [central]) else { return }
                sender.advance()
                transfers[central.linkID] = sender.isFinished ? nil : sender
            }
        }
    }

    func emit(_ event: Event) {
        events.emit(AgentEvent(event, time: loop.now))
    }
}
