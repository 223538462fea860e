import LatchkeyGPIO
import LatchkeySecurity
import LatchkeyTransport

/// The lock's inputs, already debounced. Logical values: active means open / pressed /
/// at that end of travel; the wiring's active-low settings make it so.
public struct LockSensors {
    /// Active while the door is open (a reed switch).
    public var door: (any GPIOInput)?
    /// Active while the inside button is pressed.
    public var button: (any GPIOInput)?
    /// Active while the bolt is fully thrown.
    public var boltLocked: (any GPIOInput)?
    /// Active while the bolt is fully retracted.
    public var boltUnlocked: (any GPIOInput)?

    public init(door: (any GPIOInput)? = nil, button: (any GPIOInput)? = nil,
                boltLocked: (any GPIOInput)? = nil, boltUnlocked: (any GPIOInput)? = nil) {
        self.door = door
        self.button = button
        self.boltLocked = boltLocked
        self.boltUnlocked = boltUnlocked
    }

    public var hasBoltSensor: Bool { boltLocked != nil || boltUnlocked != nil }

    /// The bolt as the sensors see it; nil without bolt sensors. With one sensor the other
    /// end is inferred; contradicting or unreadable sensors count as between.
    public func boltPosition() -> BoltPosition? {
        guard hasBoltSensor else { return nil }
        let locked: Bool?, unlocked: Bool?
        do {
            locked = try boltLocked?.read()
            unlocked = try boltUnlocked?.read()
        } catch {
            return .between
        }
        switch (locked, unlocked) {
        case (true, true), (false, false): return .between
        case (true, _), (nil, false): return .locked
        case (_, true), (false, nil): return .unlocked
        case (nil, nil): return nil
        }
    }
}

/// Something went wrong that no event describes: the journal or an output failed.
public enum LockFault {
    case journal(any Error)
    case actuator(GPIOError)
    /// The status LED's line failed; the lock carries on without it.
    case statusLight(GPIOError)
}

/// The shell around `LockStateMachine`: feeds it inputs from the sensors, the actuator,
/// the journal, the timers and the agent; performs the actions it returns, in order, on
/// the one event loop. Journal calls happen here, so `record` always returns before the
/// actuator moves, and a failed `record` means no movement — but for a lock (locking is
/// safe): its record, and any outcome the journal refused, wait in `unwritten` and are
/// written, in order, when the journal takes writes again (JournalBacklog.swift).
public final class LockController {
    public let loop: any EventLoop
    public private(set) var machine: LockStateMachine
    private let actuator: ActuatorDriver
    private let sensors: LockSensors
    let journal: any DecisionJournal
    private var timers: [LockTimer: Scheduled] = [:]
    private var inbox: [LockInput] = []
    private var draining = false
    /// Journal writes the journal refused, oldest first (JournalBacklog.swift).
    var backlog = JournalBacklog()

    /// Every event, in order: the audit log and what the GATT service notifies.
    public var onEvent: ((LockEvent) -> Void)?
    /// Failures of the journal or the outputs, for the logger and alerts.
    public var onFault: ((LockFault) -> Void)?
    /// The journal took every write that waited (after a fault).
    public var onJournalCaughtUp: (() -> Void)?
    /// The board's status LED, shown the lock state after each input has run.
    public var statusLight: StatusLight?
    /// The last decision the journal accepted (durable), for the agent's timeline.
    public internal(set) var lastRecordedDecision: DecisionID?
    /// The journal's last error while it refuses writes; nil since its last write went through.
    public internal(set) var journalFault: (any Error)?
    /// How long the journal took to make `lastRecordedDecision` durable (on the store: the
    /// SQLite commit and its fsync), on the loop's clock. The agent reports it beside a
    /// command's command -> actuator time, which it is part of: the disk's share of that path
    /// told apart from the rest.
    public private(set) var lastRecordDuration: Duration?

    /// Wires everything up; nothing is read or moved until `start(recovered:)`.
    /// `firstDecisionID` should follow the highest id the journal ever held.
    public init(loop: any EventLoop, behaviour: LockBehaviour = LockBehaviour(), actuator: ActuatorDriver,
                sensors: LockSensors, journal: any DecisionJournal, operatingMode: OperatingMode = .normal,
                firstDecisionID: DecisionID = DecisionID(1)) throws(ActuatorConfigurationError) {
        guard actuator.hasBoltSensor == sensors.hasBoltSensor else {
            throw ActuatorConfigurationError("the actuator and the sensors disagree on bolt sensors")
        }
        self.loop = loop
        self.actuator = actuator
        self.sensors = sensors
        self.journal = journal
        machine = LockStateMachine(behaviour: behaviour, hardware: actuator.traits(hasDoorSensor: sensors.door != nil),
                                   operatingMode: operatingMode, firstDecisionID: firstDecisionID)
        sensors.door?.onEdge = { [weak self] edge in self?.feed(.doorSensor(open: edge.isActive)) }
        sensors.button?.onEdge = { [weak self] edge in
            if edge.isActive { self?.feed(.buttonPressed) }
        }
        sensors.boltLocked?.onEdge = { [weak self] _ in self?.boltSensorChanged() }
        sensors.boltUnlocked?.onEdge = { [weak self] _ in self?.boltSensorChanged() }
        actuator.onMovementCompleted = { [weak self] operation in self?.feed(.movementCompleted(operation)) }
        actuator.onReleased = { [weak self] in self?.feed(.actuatorReleased) }
        actuator.onFault = { [weak self] error in
            self?.onFault?(.actuator(error))
            self?.feed(.actuatorFault)
        }
    }

    /// Convenience: the actuator and sensors of opened hardware.
    public convenience init(loop: any EventLoop, behaviour: LockBehaviour = LockBehaviour(), hardware: LockHardware,
                            journal: any DecisionJournal, operatingMode: OperatingMode = .normal,
                            firstDecisionID: DecisionID = DecisionID(1)) throws(ActuatorConfigurationError) {
        try self.init(loop: loop, behaviour: behaviour, actuator: hardware.actuator, sensors: hardware.sensors,
                      journal: journal, operatingMode: operatingMode, firstDecisionID: firstDecisionID)
        if let led = hardware.statusLED {
            let light = StatusLight(led, loop: loop)
            light.onError = { [weak self] error in self?.onFault?(.statusLight(error)) }
            statusLight = light
        }
    }

    public var lockState: LockState { machine.lockState }
    public var doorState: DoorState { machine.doorState }
    public var operatingMode: OperatingMode { machine.operatingMode }
    public var actuatorEnabled: Bool { machine.actuatorEnabled }

    /// Reads the sensors, then reconciles with `recovered`, the decision the journal holds
    /// as recorded but never completed (nil after a clean stop): a lock decision is
    /// resumed; an unlock is resumed only inside its validity window, else the lock
    /// resolves to locked. Until this runs the lock state is unknown and commands fail.
    /// `lastLogged`: the lock state the audit log ends with; a log that says unlocked while the
    /// lock measures locked gets the relock that happened while nobody ran.
    public func start(recovered: LockDecision?, lastLogged: LockState? = nil) {
        let doorOpen: Bool?
        do { doorOpen = try sensors.door?.read() } catch { doorOpen = nil }
        feed(.start(StartupReading(doorOpen: doorOpen, bolt: sensors.boltPosition(), lastLogged: lastLogged),
                    recovered: recovered))
    }

    /// A key's lock or unlock, as `LockAuthority` allowed it: the only way a request from a
    /// key reaches the bolt. The lock's own rules still decide (operating mode, door, a
    /// moving bolt). Returns what became of it (`CommandOutcome`): the refusal, or the decision
    /// the journal holds (none when the bolt was already there) and whether the bolt is moving;
    /// the movement's end comes later as events (LockOperation, LockOperationError).
    /// `relockAfter` is an unlock-with-timeout's time; `validUntil` the command's deadline;
    /// `counter` the command's new counter, committed with its decision (`DecisionJournal`).
    @discardableResult
    public func submit(_ authorization: Authorization, counter: KeyCounter? = nil, validUntil: Instant? = nil,
                       relockAfter: Duration = .seconds(1)) -> CommandOutcome {
        commandCounter = counter.flatMap { $0.keyID == authorization.keyID ? $0 : nil }
        defer { commandCounter = nil }
        let operation: LockCommand.Operation
        switch authorization.operation {
        case .lock: operation = .lock
        case .unlock, .arrivalUnlock: operation = .unlock
        case .unlockWithTimeout: operation = .unlockWithTimeout(relockAfter)
        case .present, .setOperatingMode: return .refused(.unspecified)  // they move no bolt
        }
        let source: OperationSource = authorization.entry == .bluetooth ? .remote : .proprietaryRemote
        return decide(LockCommand(operation, source: source, who: KeyID(authorization.keyID), validUntil: validUntil))
    }

    /// The lock locks by itself (a phone's departure, a relock after an arrival the door did
    /// not follow), in `key`'s name when it is that key's leaving. Only ever a lock: nothing
    /// unlocks on its own.
    @discardableResult
    public func lockAutomatically(for key: KeyID?) -> CommandOutcome {
        decide(LockCommand(.lock, source: .auto, who: key))
    }

    /// The counter of the key command being submitted, for the decision it leads to.
    private var commandCounter: KeyCounter?

    /// Feeds a command whatever its source: the button's path inside the lock, and tests.
    /// Everything from a key goes through `submit(_ authorization:)`.
    @discardableResult
    func submit(_ command: LockCommand) -> CommandOutcome {
        decide(command)
    }

    /// Runs `command` and everything it causes. What became of it comes from the machine's
    /// verdict, the journal's answer to the decision, and the decision's completion when the
    /// movement ended before this returns.
    private func decide(_ command: LockCommand) -> CommandOutcome {
        guard !draining else {
            inbox.append(.command(command))  // behind the input running now, like any input
            return .queued
        }
        let (verdict, actions) = machine.handle(command, at: loop.now)
        let answers = drain(first: actions)
        switch verdict {
        case .refused(let error):
            return .refused(error)
        case .alreadyThere:
            return .decided(DecidedCommand(moving: machine.isMoving))
        case .journaling(let decision):
            // A movement that failed at once failed whatever the journal said of its decision.
            let failed = answers.completed[decision.id]?.failure
            guard let durable = answers.recorded[decision.id] else {
                // The journal refused the decision: a lock moves all the same (it is written
                // once the journal takes writes), an unlock does not (`LockStateMachine`).
                return decision.operation == .lock ? .decided(DecidedCommand(moving: machine.isMoving, failed: failed))
                                                   : .refused(.journalFailed)
            }
            return .decided(DecidedCommand(decision: decision.id, durable: durable, moving: machine.isMoving, failed: failed))
        }
    }

    /// A key's change of the operating mode, as `LockAuthority` allowed it (an admin key's
    /// `setOperatingMode`); false when refused (an operation is under way, or Passage with an
    /// actuator that cannot hold the door unlocked). Logged as an OperatingModeChange with the key.
    @discardableResult
    public func setOperatingMode(_ mode: OperatingMode, authorized: Authorization) -> Bool {
        guard authorized.operation == .setOperatingMode else { return false }
        let source: OperationSource = authorized.entry == .bluetooth ? .remote : .proprietaryRemote
        feed(.setOperatingMode(mode, source: source, who: KeyID(authorized.keyID)))
        return machine.operatingMode == mode
    }

    /// The operating mode changed on the lock itself: restored at start (`auto`) or set at the
    /// door (`manual`); never a remote source, which needs `setOperatingMode(_:authorized:)`.
    @discardableResult
    public func setOperatingMode(_ mode: OperatingMode, source: LocalSource) -> Bool {
        feed(.setOperatingMode(mode, source: source.operationSource, who: nil))
        return machine.operatingMode == mode
    }

    /// Any source, `who` as given: for the lock's own tests of the mode rules.
    @discardableResult
    func changeOperatingMode(_ mode: OperatingMode, source: OperationSource, who: KeyID? = nil) -> Bool {
        feed(.setOperatingMode(mode, source: source, who: who))
        return machine.operatingMode == mode
    }

    /// Who changes the operating mode on the lock itself.
    public enum LocalSource: Sendable {
        case auto, manual

        var operationSource: OperationSource { self == .auto ? .auto : .manual }
    }

    // MARK: The loop

    /// Runs one input and everything it causes, in order. Re-entrant calls (an event
    /// handler submitting a command) queue behind the current input.
    private func feed(_ input: LockInput) {
        inbox.append(input)
        guard !draining else { return }
        drain()
    }

    /// What the journal was told while inputs ran: how long each decision took to be durable
    /// (those it refused are absent), and how each decision completed.
    private struct JournalAnswers {
        var recorded: [DecisionID: Duration] = [:]
        var completed: [DecisionID: DecisionOutcome] = [:]
    }

    /// Performs `first` (a command's actions), then runs each waiting input and everything it
    /// causes, in order.
    @discardableResult
    private func drain(first: [LockAction] = []) -> JournalAnswers {
        draining = true
        defer { draining = false }
        var answers = JournalAnswers()
        var actions = first
        while true {
            for action in actions { perform(action, answers: &answers) }
            guard !inbox.isEmpty else { break }
            actions = machine.handle(inbox.removeFirst(), at: loop.now)
        }
        statusLight?.show(machine.lockState)
        return answers
    }

    private func perform(_ action: LockAction, answers: inout JournalAnswers) {
        switch action {
        case .record(let decision):
            do {
                try writeBacklog()  // in order: what waits goes first
                let started = loop.now
                if let counter = commandCounter, decision.who == KeyID(counter.keyID) {
                    try journal.record(decision, committing: counter)
                    commandCounter = nil
                } else {
                    try journal.record(decision)
                }
                let took = loop.now - started
                lastRecordDuration = took
                lastRecordedDecision = decision.id
                answers.recorded[decision.id] = took
                journalFault = nil
                inbox.append(.journalRecorded(decision.id))
            } catch {
                journalFault = error
                onFault?(.journal(error))
                if decision.operation == .lock { keepForLater(.record(decision)) }  // the machine moves it anyway
                inbox.append(.journalFailed(decision.id))
            }
        case .complete(let id, let outcome):
            answers.completed[id] = outcome
            do {
                try writeBacklog()
                try journal.complete(id, outcome: outcome)
                journalFault = nil
            } catch {
                journalFault = error
                onFault?(.journal(error))
                keepForLater(.complete(id, outcome))
            }
        case .drive(let operation):
            do { try actuator.drive(operation) } catch {
                onFault?(.actuator(error))
                inbox.append(.actuatorFault)
            }
        case .stopActuator:
            do { try actuator.stop() } catch { onFault?(.actuator(error)) }
        case .startTimer(let timer, let delay):
            timers[timer]?.cancel()
            timers[timer] = loop.schedule(after: delay) { [weak self] in
                self?.timers[timer] = nil
                self?.feed(.timerFired(timer))
            }
        case .cancelTimer(let timer):
            timers[timer]?.cancel()
            timers[timer] = nil
        case .emit(let event):
            onEvent?(event)
        }
    }

    private func boltSensorChanged() {
        guard let position = sensors.boltPosition() else { return }
        actuator.boltMoved(to: position)
        feed(.boltPosition(position))
    }
}
