import LatchkeyGPIO
import LatchkeyTransport

/// Where a simulated chip keeps its physical levels: in memory (`SimulatedGPIOChip`) or in
/// gpio-sim-like files another process can see (`FileGPIOChip`).
protocol SimulatedLevels: AnyObject {
    /// Sets the physical level this process drives on an output line.
    func drive(offset: Int, high: Bool) throws(GPIOError)
    /// The physical level the outside world applies to a line (gpio-sim's "pull").
    func pulled(offset: Int) throws(GPIOError) -> Bool
}

/// The kernel's side of a simulated chip, shared by both simulations: line lookup by name,
/// one request per line (busy otherwise), the active-low inversion, and edge delivery
/// through the loop, the way the GPIO character device does it for a real chip.
final class SimulatedLineTable {
    struct Request {
        var consumer: String
        var config: GPIOLineConfig
        var isOutput: Bool
    }

    let label: String
    let names: [String]
    let loop: any EventLoop
    let levels: any SimulatedLevels
    private(set) var requests: [Int: Request] = [:]
    private var inputs: [Int: WeakInput] = [:]

    init(label: String, names: [String], loop: any EventLoop, levels: any SimulatedLevels) {
        self.label = label
        self.names = names
        self.loop = loop
        self.levels = levels
    }

    func offset(of line: String) throws(GPIOError) -> Int {
        guard let offset = names.firstIndex(of: line) else {
            throw GPIOError(.lineNotFound, chip: label, line: line)
        }
        return offset
    }

    func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput {
        let offset = try claim(line, config, isOutput: true)
        // The request itself drives the inactive level: physical high when active-low.
        do {
            try levels.drive(offset: offset, high: config.activeLow)
        } catch {
            requests[offset] = nil
            throw error
        }
        return SimulatedOutput(table: self, offset: offset, activeLow: config.activeLow)
    }

    func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput {
        let offset = try claim(line, config, isOutput: false)
        let initial: Bool
        do {
            initial = try levels.pulled(offset: offset) != config.activeLow
        } catch {
            requests[offset] = nil
            throw error
        }
        let input = SimulatedInput(table: self, offset: offset, activeLow: config.activeLow, lastValue: initial)
        inputs[offset] = WeakInput(input: input)
        return input
    }

    /// Re-reads the pull of every requested input and queues an edge for each change.
    /// Reads every line even when one fails, then throws the first failure.
    func refreshInputs() throws(GPIOError) {
        var firstError: GPIOError?
        for offset in inputs.keys.sorted() {
            do { try refreshInput(offset: offset) } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }

    func refreshInput(offset: Int) throws(GPIOError) {
        guard let input = inputs[offset]?.input else { return }
        let value = try levels.pulled(offset: offset) != input.activeLow
        guard value != input.lastValue else { return }
        input.lastValue = value
        let edge = GPIOEdge(isActive: value, time: loop.now)
        loop.execute { [weak input] in input?.onEdge?(edge) }
    }

    func consumer(ofLine line: String) -> String? {
        // No such line: no consumer, which is the answer asked for.
        guard let offset = try? offset(of: line) else { return nil }
        return requests[offset]?.consumer
    }

    func isOutput(offset: Int) -> Bool { requests[offset]?.isOutput ?? false }

    private func claim(_ line: String, _ config: GPIOLineConfig, isOutput: Bool) throws(GPIOError) -> Int {
        let offset = try offset(of: line)
        if let holder = requests[offset] {
            throw GPIOError(.lineBusy, chip: label, line: line, detail: "held by \(holder.consumer)")
        }
        requests[offset] = Request(consumer: config.consumer, config: config, isOutput: isOutput)
        return offset
    }
}

private struct WeakInput {
    weak var input: SimulatedInput?
}

final class SimulatedOutput: GPIOOutput {
    private let table: SimulatedLineTable
    private let offset: Int
    private let activeLow: Bool
    private(set) var isActive = false

    init(table: SimulatedLineTable, offset: Int, activeLow: Bool) {
        self.table = table
        self.offset = offset
        self.activeLow = activeLow
    }

    var name: String { table.names[offset] }

    func set(_ active: Bool) throws(GPIOError) {
        try table.levels.drive(offset: offset, high: active != activeLow)
        isActive = active
    }
}

final class SimulatedInput: GPIOInput {
    private let table: SimulatedLineTable
    let offset: Int
    let activeLow: Bool
    /// The value of the last edge queued (the kernel's view of the line).
    var lastValue: Bool
    var onEdge: ((GPIOEdge) -> Void)?

    init(table: SimulatedLineTable, offset: Int, activeLow: Bool, lastValue: Bool) {
        self.table = table
        self.offset = offset
        self.activeLow = activeLow
        self.lastValue = lastValue
    }

    var name: String { table.names[offset] }

    func read() throws(GPIOError) -> Bool {
        try table.levels.pulled(offset: offset) != activeLow
    }
}
