import LatchkeyGPIO
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeySim
import LatchkeySimGPIO

/// A lock controller on a simulated chip, started, its door closed and its latch timed: what
/// the lock agent's components hand decisions to in their unit tests.
struct ControllerRig {
    let chip: SimulatedGPIOChip
    let clock: OutputChangeClock
    let controller: LockController
    let journal = InMemoryDecisionJournal()

    init(loop: ManualEventLoop) throws {
        chip = SimulatedGPIOChip(label: "sim-lock", lineNames: ["latch", "door"], loop: loop)
        chip.pull("door", high: false)
        clock = OutputChangeClock(loop: loop)
        let hardware = try LockHardware.open(LockWiring(chipLabel: "sim-lock", actuator: .hold, unlockOutput: .init("latch"),
                                                        door: .init("door")),
                                             chips: TimingChipFinder(GPIOChipSet([chip]), clock: clock), loop: loop)
        controller = try LockController(loop: loop, hardware: hardware, journal: journal)
        controller.start(recovered: nil, lastLogged: nil)
        loop.run()
    }
}
