import LatchkeyGPIO
import LatchkeyLock
import LatchkeySim
import LatchkeySimGPIO
import Testing

/// Inputs are debounced once: by the kernel when the chip takes the period (libgpiod 2), else
/// in software (`DebouncedInput`: libgpiod 1.6, simulated and file-backed chips).
@Suite struct LockHardwareDebounceTests {
    /// A simulated chip that says it debounces in the kernel, as `LibgpiodChip` on libgpiod 2
    /// does, and keeps the configs it was asked for.
    final class KernelDebouncingChip: GPIOChip {
        let inner: SimulatedGPIOChip
        var inputConfigs: [GPIOLineConfig] = []
        init(_ inner: SimulatedGPIOChip) { self.inner = inner }
        var label: String { inner.label }
        var debouncesInputs: Bool { true }
        func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput {
            try inner.requestOutput(line, config)
        }
        func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput {
            inputConfigs.append(config)
            return try inner.requestInput(line, config)
        }
    }

    let loop = ManualEventLoop()
    var wiring: LockWiring {
        var wiring = LockWiring(chipLabel: "sim-lock", actuator: .hold, unlockOutput: .init("latch"),
                                door: .init("door", activeLow: true, bias: .pullUp))
        wiring.debounce = .milliseconds(30)
        return wiring
    }

    @Test func aKernelDebouncingChipGetsThePeriodAndNoSoftwareDebounce() throws {
        let chip = KernelDebouncingChip(SimulatedGPIOChip(label: "sim-lock", lineNames: ["latch", "door"], loop: loop))
        let hardware = try LockHardware.open(wiring, chips: GPIOChipSet([chip]), loop: loop)
        #expect(chip.inputConfigs.map(\.debounce) == [.milliseconds(30)])
        #expect(chip.inputConfigs.first?.activeLow == true)
        #expect(chip.inputConfigs.first?.bias == .pullUp)
        #expect(!(hardware.sensors.door is DebouncedInput), "debounced twice would add 30 ms to every edge")
    }

    @Test func anyOtherChipIsDebouncedInSoftware() throws {
        let chip = SimulatedGPIOChip(label: "sim-lock", lineNames: ["latch", "door"], loop: loop)
        let hardware = try LockHardware.open(wiring, chips: GPIOChipSet([chip]), loop: loop)
        #expect(hardware.sensors.door is DebouncedInput)
    }
}
