import LatchkeyGPIO
import LatchkeyTransport

/// An in-process GPIO chip with named lines: the lock's `GPIOChip` on one side, and on the
/// other the handles Linux's gpio-sim gives a test (`sim_gpioN/value` and `/pull`): read
/// the physical level an output drives, and pull an input high or low.
///
/// Every line starts pulled down, like gpio-sim's default. Edges from `pull` are delivered
/// through the loop, never inside the `pull` call.
public final class SimulatedGPIOChip: GPIOChip {
    private let table: SimulatedLineTable
    private let memory: MemoryLevels

    public init(label: String, lineNames: [String], loop: any EventLoop) {
        precondition(Set(lineNames).count == lineNames.count, "line names must be unique")
        memory = MemoryLevels(count: lineNames.count)
        table = SimulatedLineTable(label: label, names: lineNames, loop: loop, levels: memory)
    }

    public var label: String { table.label }
    /// Edges are raw: the lock debounces them in software (`DebouncedInput`).
    public var debouncesInputs: Bool { false }

    public func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput {
        try table.requestOutput(line, config)
    }

    public func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput {
        try table.requestInput(line, config)
    }

    // MARK: The simulated side

    /// The physical level of `line`: what an output drives, or else what it is pulled to.
    public func isHigh(_ line: String) -> Bool {
        let offset = existing(line)
        return table.isOutput(offset: offset) ? memory.driven[offset] : memory.pull[offset]
    }

    /// Applies a physical level to `line` from outside (a switch, a sensor). An input that
    /// changes logical value gets an edge on the next turn of the loop.
    public func pull(_ line: String, high: Bool) {
        let offset = existing(line)
        memory.pull[offset] = high
        // Memory reads cannot fail.
        try? table.refreshInput(offset: offset)
    }

    /// From now on every write to `line` fails with EIO, as a line whose chip went away does.
    public func failWrites(to line: String) {
        memory.failing.insert(existing(line))
    }

    /// Who holds `line`, as `gpioinfo` would show it.
    public func consumer(of line: String) -> String? { table.consumer(ofLine: line) }

    private func existing(_ line: String) -> Int {
        // A missing line is a wiring bug in the test: the trap below names it.
        guard let offset = try? table.offset(of: line) else {
            preconditionFailure("no line '\(line)' on simulated chip '\(label)'")
        }
        return offset
    }
}

private final class MemoryLevels: SimulatedLevels {
    var driven: [Bool]
    var pull: [Bool]

    init(count: Int) {
        driven = Array(repeating: false, count: count)
        pull = Array(repeating: false, count: count)
    }

    var failing: Set<Int> = []

    func drive(offset: Int, high: Bool) throws(GPIOError) {
        if failing.contains(offset) { throw GPIOError(.ioFailed, chip: "simulated", errno: 5 /* EIO */, detail: "write failed (injected)") }
        driven[offset] = high
    }
    func pulled(offset: Int) throws(GPIOError) -> Bool { pull[offset] }
}
