import LatchkeyGPIO
import LatchkeyLock
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTransport
import Testing

/// Drive kinds and the energize bound, seen on the simulated lines.
@Suite struct ActuatorDriverTests {
    let loop = ManualEventLoop()
    let chip: SimulatedGPIOChip

    init() {
        chip = SimulatedGPIOChip(label: "c", lineNames: ["A", "B"], loop: loop)
    }

    func output(_ line: String) throws -> any GPIOOutput {
        try chip.requestOutput(line, GPIOLineConfig(consumer: "t"))
    }

    @Test func configurationsThatCouldOverheatACoilAreRejected() throws {
        let coil = try output("A")
        let tooLong = #expect(throws: ActuatorConfigurationError.self) {
            _ = try ActuatorDriver(kind: .pulse(.seconds(5)), unlockOutput: coil, maximumEnergizeTime: .seconds(3),
                                   hasBoltSensor: false, loop: loop)
        }
        #expect(tooLong?.message.contains("exceeds") == true)
        #expect(throws: ActuatorConfigurationError.self) {
            _ = try ActuatorDriver(kind: .motor(runTime: .seconds(2)), unlockOutput: coil, hasBoltSensor: false, loop: loop)
        }
        #expect(throws: ActuatorConfigurationError.self) {
            _ = try ActuatorDriver(kind: .hold, unlockOutput: coil, lockOutput: try output("B"), hasBoltSensor: false, loop: loop)
        }
        #expect(throws: ActuatorConfigurationError.self) {
            _ = try ActuatorDriver(kind: .pulse(.zero), unlockOutput: coil, hasBoltSensor: false, loop: loop)
        }
    }

    @Test func motorWithoutSensorsRunsForItsRunTime() throws {
        let driver = try ActuatorDriver(kind: .motor(runTime: .seconds(2)), unlockOutput: try output("A"),
                                        lockOutput: try output("B"), hasBoltSensor: false, loop: loop)
        var completed: [LockOperationType] = []
        driver.onMovementCompleted = { completed.append($0) }
        try driver.drive(.unlock)
        #expect(chip.isHigh("A") && !chip.isHigh("B"))
        loop.advance(by: .seconds(2) - .milliseconds(1))
        #expect(completed.isEmpty && chip.isHigh("A"))
        loop.advance(by: .milliseconds(1))
        #expect(completed == [.unlock])
        #expect(!chip.isHigh("A") && !chip.isHigh("B"))
        try driver.drive(.lock)
        #expect(!chip.isHigh("A") && chip.isHigh("B"), "never both directions at once")
    }

    @Test func motorStopsAtItsLimitSwitch() throws {
        let driver = try ActuatorDriver(kind: .motor(runTime: .seconds(2)), unlockOutput: try output("A"),
                                        lockOutput: try output("B"), hasBoltSensor: true, loop: loop)
        try driver.drive(.lock)
        driver.boltMoved(to: .between)
        #expect(chip.isHigh("B"))
        driver.boltMoved(to: .locked)
        #expect(!chip.isHigh("B"))
        #expect(!driver.isEnergized)
    }

    @Test func aMotorIsCutOffAtTheEnergizeLimitBeforeTheJamTimeout() throws {
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, maximumEnergizeTime: .seconds(3),
                              bolt: .unlocked)
        rig.start()
        rig.submit(.lock)
        rig.loop.advance(by: .seconds(3) - .milliseconds(1))
        #expect(rig.lockEnergized)
        rig.loop.advance(by: .milliseconds(1))
        #expect(!rig.lockEnergized, "the driver's own bound, whatever the state machine does")
        #expect(rig.state == .locking)
        rig.loop.advance(by: .seconds(2))
        #expect(rig.state == .notFullyLocked)
    }

    @Test func theControllerRefusesMismatchedSensors() throws {
        let driver = try ActuatorDriver(kind: .hold, unlockOutput: try output("A"), hasBoltSensor: true, loop: loop)
        #expect(throws: ActuatorConfigurationError.self) {
            _ = try LockController(loop: loop, actuator: driver, sensors: LockSensors(), journal: InMemoryDecisionJournal())
        }
    }

    @Test func hardwareIsOpenedOutputsFirstAndErrorsNameTheLine() throws {
        let wiring = LockWiring(chipLabel: "c", actuator: .hold, unlockOutput: .init("A", activeLow: true),
                                door: .init("NOPE"))
        let error = #expect(throws: LockHardwareError.self) {
            _ = try LockHardware.open(wiring, chips: GPIOChipSet([chip]), loop: loop)
        }
        #expect(error == .gpio(GPIOError(.lineNotFound, chip: "c", line: "NOPE")))
        #expect(chip.isHigh("A"), "the output was already requested, inactive (active-low: high)")
    }
}
