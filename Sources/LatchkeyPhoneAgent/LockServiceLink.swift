import LatchkeyCentral
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers

/// The lock service on the lock's link: routes the peripheral's GATT callbacks to the
/// components whose state lives with the link (`LockServiceSetup`, `ChallengeReadAhead`,
/// `PhoneLinkSession`, `LockStatusReports`, `LogTransfer`, `LinkIntervalGovernor`, and the
/// `CommandPipeline` that writes over it) and does their I/O on the peripheral. What a callback
/// means for the phone as a whole (presence, the owner's status callback, a revoked key, the
/// `present` a ready link sends) it asks of its agent.
final class LockServiceLink {
    unowned let agent: PhoneAgent
    let lock: Peripheral
    let output: PhoneEventOutput
    let wakeWork: WakeWork
    let logTransfer: LogTransfer
    let readAhead: ChallengeReadAhead
    let linkSession: PhoneLinkSession
    let statusReports: LockStatusReports
    /// The link's connection interval: fast while busy, slow while idle.
    private(set) var linkInterval: LinkIntervalGovernor!
    /// The lock service's GATT setup on the current link: its handles, whether it is ready.
    private(set) var setup: LockServiceSetup<Peripheral>!
    /// The commands: waiting for the GATT setup or their turn, in flight, answered.
    private(set) var commands: CommandPipeline!

    init(agent: PhoneAgent, lock: Peripheral, configuration: PhoneAgentConfiguration, wakeWork: WakeWork,
         output: PhoneEventOutput) {
        self.agent = agent
        self.lock = lock
        self.output = output
        self.wakeWork = wakeWork
        self.logTransfer = LogTransfer(events: output)
        self.readAhead = ChallengeReadAhead(events: output)
        self.linkSession = PhoneLinkSession(secret: configuration.secret, events: output)
        self.statusReports = LockStatusReports(events: output)
        linkInterval = LinkIntervalGovernor(
            connectionInterval: configuration.connectionInterval,
            idleConnectionInterval: configuration.idleConnectionInterval, idleAfter: configuration.idleAfter,
            link: LinkIntervalGovernor.Link(
                isIdle: { [weak self] in self?.linkIsIdle ?? false },
                isConnected: { [weak self] in self?.lock.state == .connected },
                request: { [weak self] in self?.lock.requestConnectionInterval($0) ?? false }),
            events: output)
        setup = LockServiceSetup<Peripheral>(
            timeout: configuration.setupTimeout, backgroundTasks: wakeWork.backgroundTasks, events: output,
            complete: { [weak self] in self?.becomeReady($0) }, timedOut: { [weak self] in self?.setupTimedOut() })
        commands = CommandPipeline(
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
                    return setup.rediscoverIfStale(on: lock, error)
                },
                drop: { [weak self] in self?.drop() },
                nextCounter: { [weak self] in self?.agent.presenceKeeper.nextCounter() }),
            readAhead: readAhead, session: linkSession, wakeWork: wakeWork, events: output)
    }

    var ready: Bool { setup.ready }
    var control: RemoteCharacteristic? { setup.control }
    var challenge: RemoteCharacteristic? { setup.challenge }
    var status: RemoteCharacteristic? { setup.status }
    var transferCharacteristic: RemoteCharacteristic? { setup.transfer }

    /// No command queued or in flight: the link's ATT queue is free for the subscription
    /// (`subscribeOnceInSession`), which must not slip between a challenge read and its write.
    var commandsIdle: Bool { commands.isIdle }

    /// Nothing under way on a ready link: no command, no challenge read ahead, no log fetch.
    var linkIsIdle: Bool { ready && commandsIdle && !readAhead.isReading && !logTransfer.isRunning }

    /// Drops the link; the request that never times out forms a fresh one.
    private func drop() {
        agent.central.cancelPeripheralConnection(lock)
    }

    /// The GATT setup did not finish: a request was lost (the lock died and adopted the link
    /// again without having seen it). Drop the link; the request that never times out forms
    /// a fresh one.
    private func setupTimedOut() {
        guard lock.state == .connected else { return }
        emit(.phoneSetupTimeout)
        drop()
    }

    // MARK: The link's life

    /// A link formed (or was adopted): nothing read ahead, slowed or opened on an earlier one
    /// stands, and its setup starts under its timeout (`continueSetup` runs its steps).
    func linkFormed() {
        readAhead.forgetChallengeAhead()
        linkInterval.forgetLinkInterval()
        linkSession.endSession()
        setup.linkFormed()
    }

    /// The setup's next missing step on `peripheral` (`LockServiceSetup`).
    func continueSetup(_ peripheral: Peripheral) {
        setup.continueSetup(on: peripheral)
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
        setup.continueSetup(on: peripheral)
    }

    /// The link went: not ready, nothing read ahead, slowed or opened on it stands.
    func linkLost() {
        setup.linkLost()
        readAhead.forgetChallengeAhead()
        linkInterval.forgetLinkInterval()
        linkSession.endSession()
    }

    /// The lock service is usable on this link: tie the link to our key and send what waits.
    private func becomeReady(_ peripheral: Peripheral) {
        setup.becameReady()
        emit(.phoneGattReady(mtu: peripheral.mtu))
        defer { setup.setupDone() }
        // Tie this link to our key on the lock (its loss then starts the lock's departure
        // grace). An arrival request, when one is queued, does that already.
        if commands.isIdle {
            agent.perform(.present) { [weak self] result in
                if case .failure(let e) = result { self?.emit(.phonePresentFailed(error: "\(e)")) }
            }
        }
        commands.pump()
    }

    // MARK: GATT callbacks, routed by characteristic

    func discoveredServices(_ peripheral: Peripheral, error: BluetoothError?) {
        setup.servicesDiscovered(on: peripheral, error: error)
    }

    func discoveredCharacteristics(_ peripheral: Peripheral, of service: RemoteService, error: BluetoothError?) {
        setup.characteristicsDiscovered(on: peripheral, find: { service.characteristic($0) }, error: error)
    }

    func notificationStateChanged(_ peripheral: Peripheral, for characteristic: RemoteCharacteristic,
                                  error: BluetoothError?) {
        if characteristic === transferCharacteristic { carryOut(logTransfer.subscriptionChanged(error: error)); return }
        guard characteristic === status else { return }
        setup.statusSubscriptionChanged(on: peripheral, error: error)
    }

    func valueUpdated(_ peripheral: Peripheral, for characteristic: RemoteCharacteristic, error: BluetoothError?) {
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
            agent.onStatus?(frame)
            agent.presenceKeeper.retryArrivalIfTheBoltRests(frame)
            return
        }
        guard characteristic === challenge else { return }
        if readAhead.isReading {
            challengeReadAhead(peripheral, value: characteristic.value, error: error)
            return
        }
        commands.challengeRead(value: characteristic.value, error: error)
    }

    func valueWritten(_ peripheral: Peripheral, for characteristic: RemoteCharacteristic, error: BluetoothError?) {
        if characteristic === transferCharacteristic { logTransfer.requestWritten(error: error); return }
        guard characteristic === control else { return }
        let answer = commands.writeAnswered(error: error)
        guard answer != .none, answer != .sentAgain else { return }
        if case .answered(_, .unknownKey?) = answer { agent.lockSaidOurKeyIsRevoked() }
        subscribeOnceInSession(peripheral)  // after the next command, if one waits
        readChallengeAhead(peripheral)      // for the next command, once nothing waits
        linkInterval.linkWentIdle()         // if nothing else is under way
    }

    func emit(_ event: Event) {
        output.emit(event)
    }
}
