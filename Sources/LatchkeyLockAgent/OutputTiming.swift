import LatchkeyGPIO
import LatchkeyLock
import LatchkeyTransport

/// Records when an actuator output last changed, so the lock agent can measure its own
/// software path — command received → line changed — rather than assume it. A decorator at
/// the GPIO seam: the lock domain does not know it is there.
public final class OutputChangeClock {
    let loop: any EventLoop
    public private(set) var lastChange: Instant?
    public private(set) var changeCount = 0
    public init(loop: any EventLoop) { self.loop = loop }
    func note() { lastChange = loop.now; changeCount += 1 }
}

public struct TimingChipFinder: GPIOChipFinder {
    let inner: any GPIOChipFinder
    let clock: OutputChangeClock
    public init(_ inner: any GPIOChipFinder, clock: OutputChangeClock) { self.inner = inner; self.clock = clock }
    public func chip(labelled label: String) throws(GPIOError) -> any GPIOChip {
        TimingChip(inner: try inner.chip(labelled: label), clock: clock)
    }
}

final class TimingChip: GPIOChip {
    let inner: any GPIOChip
    let clock: OutputChangeClock
    init(inner: any GPIOChip, clock: OutputChangeClock) { self.inner = inner; self.clock = clock }
    var label: String { inner.label }
    var debouncesInputs: Bool { inner.debouncesInputs }
    func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput {
        TimingOutput(inner: try inner.requestOutput(line, config), clock: clock)
    }
    func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput {
        try inner.requestInput(line, config)
    }
}

final class TimingOutput: GPIOOutput {
    let inner: any GPIOOutput
    let clock: OutputChangeClock
    init(inner: any GPIOOutput, clock: OutputChangeClock) { self.inner = inner; self.clock = clock }
    var name: String { inner.name }
    var isActive: Bool { inner.isActive }
    func set(_ active: Bool) throws(GPIOError) {
        let changed = active != inner.isActive
        try inner.set(active)
        if changed { clock.note() }
    }
}
