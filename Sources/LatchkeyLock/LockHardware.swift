import LatchkeyGPIO
import LatchkeyTransport

/// Which lines of which chip the lock uses: the part of a board definition the lock
/// needs. Chips by label, lines by name.
public struct LockWiring: Hashable, Sendable {
    public struct Output: Hashable, Sendable {
        public var line: String
        public var activeLow: Bool
        public init(_ line: String, activeLow: Bool = false) {
            self.line = line
            self.activeLow = activeLow
        }
    }

    public struct Input: Hashable, Sendable {
        public var line: String
        public var activeLow: Bool
        public var bias: GPIOBias
        public init(_ line: String, activeLow: Bool = false, bias: GPIOBias = .asIs) {
            self.line = line
            self.activeLow = activeLow
            self.bias = bias
        }
    }

    public var chipLabel: String
    /// The consumer name every request carries (shown by `gpioinfo`).
    public var consumer: String
    public var actuator: ActuatorKind
    /// Energises toward unlocked (the only output of hold and pulse actuators).
    public var unlockOutput: Output
    /// The motor's lock direction.
    public var lockOutput: Output?
    public var maximumEnergizeTime: Duration?
    /// Active while the door is open.
    public var door: Input?
    /// Active while pressed.
    public var button: Input?
    /// Active while the bolt is fully thrown.
    public var boltLocked: Input?
    /// Active while the bolt is fully retracted.
    public var boltUnlocked: Input?
    /// The status LED (`StatusLight`), if the board has one.
    public var statusLED: Output?
    /// The debounce of every input: the kernel's where the chip has it (libgpiod 2), else `DebouncedInput`.
    public var debounce: Duration = DebouncedInput.defaultInterval

    public init(chipLabel: String, consumer: String = "latchkey-lock", actuator: ActuatorKind, unlockOutput: Output,
                lockOutput: Output? = nil, maximumEnergizeTime: Duration? = nil, door: Input? = nil,
                button: Input? = nil, boltLocked: Input? = nil, boltUnlocked: Input? = nil, statusLED: Output? = nil) {
        self.chipLabel = chipLabel
        self.consumer = consumer
        self.actuator = actuator
        self.unlockOutput = unlockOutput
        self.lockOutput = lockOutput
        self.maximumEnergizeTime = maximumEnergizeTime
        self.door = door
        self.button = button
        self.boltLocked = boltLocked
        self.boltUnlocked = boltUnlocked
        self.statusLED = statusLED
    }

    /// Each wired line with its configuration field (`unlock_line` …), for checks and listings.
    public var namedLines: [(field: String, line: String)] {
        let inputs: [(String, Input?)] = [("door_line", door), ("button_line", button),
                                          ("bolt_locked_line", boltLocked), ("bolt_unlocked_line", boltUnlocked)]
        return [("unlock_line", unlockOutput.line)] + (lockOutput.map { [("lock_line", $0.line)] } ?? [])
            + inputs.compactMap { field, input in input.map { (field, $0.line) } }
            + (statusLED.map { [("status_led_line", $0.line)] } ?? [])
    }
}

public enum LockHardwareError: Error, Hashable, Sendable, CustomStringConvertible {
    case gpio(GPIOError)
    case configuration(ActuatorConfigurationError)

    public var description: String {
        switch self {
        case .gpio(let error): "\(error)"
        case .configuration(let error): "\(error)"
        }
    }
}

/// The lock's requested lines: an actuator driver and debounced sensors.
public struct LockHardware {
    public let actuator: ActuatorDriver
    public let sensors: LockSensors
    /// The status LED's line, requested dark.
    public let statusLED: (any GPIOOutput)?

    /// Requests the outputs first (each driven inactive by its request), then the inputs.
    public static func open(_ wiring: LockWiring, chips: any GPIOChipFinder, loop: any EventLoop)
        throws(LockHardwareError) -> LockHardware
    {
        do {
            return try openLines(wiring, chips: chips, loop: loop)
        } catch let error as GPIOError {
            throw .gpio(error)
        } catch let error as ActuatorConfigurationError {
            throw .configuration(error)
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
    }

    private static func openLines(_ wiring: LockWiring, chips: any GPIOChipFinder, loop: any EventLoop) throws -> LockHardware {
        let chip = try chips.chip(labelled: wiring.chipLabel)
        func output(_ line: LockWiring.Output) throws -> any GPIOOutput {
            try chip.requestOutput(line.line, GPIOLineConfig(consumer: wiring.consumer, activeLow: line.activeLow))
        }
        func input(_ line: LockWiring.Input?) throws -> (any GPIOInput)? {
            guard let line else { return nil }
            let raw = try chip.requestInput(line.line, GPIOLineConfig(consumer: wiring.consumer, activeLow: line.activeLow,
                                                                     bias: line.bias, debounce: wiring.debounce))
            // Debounced once: by the kernel when the chip asks it to (libgpiod 2), else here.
            if chip.debouncesInputs { return raw }
            return try DebouncedInput(raw, interval: wiring.debounce, loop: loop)
        }
        let unlock = try output(wiring.unlockOutput)
        let lock = try wiring.lockOutput.map(output)
        let sensors = LockSensors(door: try input(wiring.door), button: try input(wiring.button),
                                  boltLocked: try input(wiring.boltLocked), boltUnlocked: try input(wiring.boltUnlocked))
        let actuator = try ActuatorDriver(kind: wiring.actuator, unlockOutput: unlock, lockOutput: lock,
                                          maximumEnergizeTime: wiring.maximumEnergizeTime,
                                          hasBoltSensor: sensors.hasBoltSensor, loop: loop)
        let led = try wiring.statusLED.map(output)
        return LockHardware(actuator: actuator, sensors: sensors, statusLED: led)
    }
}
