import LatchkeyGPIO
@testable import LatchkeyLock
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTransport

/// A lock on a simulated chip with a manual clock: the hardware a test can see and drive.
final class LockRig {
    static let lines = ["ACTUATOR", "MOTOR_LOCK", "DOOR", "BUTTON", "BOLT_LOCKED", "BOLT_UNLOCKED", "SPARE"]
    static let debounce: Duration = .milliseconds(20)

    let loop: ManualEventLoop
    let chip: SimulatedGPIOChip
    let journal: InMemoryDecisionJournal
    let controller: LockController
    let hardware: LockHardware
    let activeLow: Bool
    private(set) var events: [LockEvent] = []
    private(set) var faults: [LockFault] = []

    /// Sensors start at `bolt` and `doorOpen`; nothing runs until `start`.
    init(actuator: ActuatorKind = .hold, boltSensors: Bool = false, doorSensor: Bool = true, button: Bool = true,
         activeLow: Bool = false, statusLED: Bool = false, maximumEnergizeTime: Duration? = nil, behaviour: LockBehaviour = LockBehaviour(),
         mode: OperatingMode = .normal, journal: InMemoryDecisionJournal = InMemoryDecisionJournal(),
         bolt: BoltPosition = .locked, doorOpen: Bool = false, loop: ManualEventLoop = ManualEventLoop(),
         firstDecisionID: DecisionID = DecisionID(1),
         wrapJournal: ((InMemoryDecisionJournal) -> any DecisionJournal)? = nil) throws {
        self.loop = loop
        self.journal = journal
        self.activeLow = activeLow
        chip = SimulatedGPIOChip(label: "sim-lock", lineNames: Self.lines, loop: loop)
        var wiring = LockWiring(chipLabel: "sim-lock", consumer: "lock-test", actuator: actuator,
                                unlockOutput: .init("ACTUATOR", activeLow: activeLow),
                                maximumEnergizeTime: maximumEnergizeTime)
        if case .motor = actuator { wiring.lockOutput = .init("MOTOR_LOCK", activeLow: activeLow) }
        if doorSensor { wiring.door = .init("DOOR") }
        if button { wiring.button = .init("BUTTON") }
        if boltSensors {
            wiring.boltLocked = .init("BOLT_LOCKED")
            wiring.boltUnlocked = .init("BOLT_UNLOCKED")
        }
        if statusLED { wiring.statusLED = .init("SPARE", activeLow: activeLow) }
        wiring.debounce = Self.debounce
        chip.pull("DOOR", high: doorOpen)
        Self.pullBolt(bolt, on: chip)
        loop.run()
        hardware = try LockHardware.open(wiring, chips: GPIOChipSet([chip]), loop: loop)
        controller = try LockController(loop: loop, behaviour: behaviour, hardware: hardware,
                                        journal: wrapJournal?(journal) ?? journal,
                                        operatingMode: mode, firstDecisionID: firstDecisionID)
        controller.onEvent = { [unowned self] in events.append($0) }
        controller.onFault = { [unowned self] in faults.append($0) }
    }

    func start(recovered: LockDecision? = nil, lastLogged: LockState? = nil) {
        controller.start(recovered: recovered, lastLogged: lastLogged)
        loop.run()
    }

    func submit(_ operation: LockCommand.Operation, source: OperationSource = .remote, who: KeyID? = KeyID(7)) {
        controller.submit(LockCommand(operation, source: source, who: who))
        loop.run()
    }

    // MARK: The hardware side

    /// Whether the unlock-direction output is energised, from its physical level.
    var unlockEnergized: Bool { chip.isHigh("ACTUATOR") != activeLow }
    var lockEnergized: Bool { chip.isHigh("MOTOR_LOCK") != activeLow }
    /// Whether the status LED (on SPARE) is lit, from its physical level.
    var ledLit: Bool { chip.isHigh("SPARE") != activeLow }

    func setDoor(open: Bool) {
        chip.pull("DOOR", high: open)
        loop.advance(by: Self.debounce)
    }

    func setBolt(_ position: BoltPosition) {
        Self.pullBolt(position, on: chip)
        loop.advance(by: Self.debounce)
    }

    func pressButton() {
        chip.pull("BUTTON", high: true)
        loop.advance(by: Self.debounce)
        chip.pull("BUTTON", high: false)
        loop.advance(by: Self.debounce)
    }

    private static func pullBolt(_ position: BoltPosition, on chip: SimulatedGPIOChip) {
        chip.pull("BOLT_LOCKED", high: position == .locked)
        chip.pull("BOLT_UNLOCKED", high: position == .unlocked)
    }

    // MARK: What happened

    var state: LockState { controller.lockState }

    var operations: [LockOperationRecord] {
        events.compactMap { if case .lockOperation(let record) = $0.kind { record } else { nil } }
    }

    var errors: [OperationError] {
        events.compactMap { if case .lockOperationError(_, let error) = $0.kind { error } else { nil } }
    }

    var modeChanges: [OperatingModeChangeRecord] {
        events.compactMap { if case .operatingModeChange(let c) = $0.kind { c } else { nil } }
    }

    var alarms: [AlarmCode] {
        events.compactMap { if case .doorLockAlarm(let code) = $0.kind { code } else { nil } }
    }

    var doorChanges: [DoorState] {
        events.compactMap { if case .doorStateChange(let state) = $0.kind { state } else { nil } }
    }

    var recorded: [LockDecision] {
        journal.entries.compactMap { if case .recorded(let decision) = $0 { decision } else { nil } }
    }

    func clearEvents() { events.removeAll() }
}
