import LatchkeyGPIO
import LatchkeyTransport

/// One simulated process's view of the shared manual loop: its timers and callbacks run on
/// it until the process dies, then none of them run again and what they hold is let go (a
/// killed process keeps no timer, and its store's connections close with it).
final class ProcessLoop: EventLoop {
    let base: any EventLoop
    private var pending: [Int: Box] = [:]
    private var nextID = 0
    private(set) var isAlive = true

    private final class Box { var work: (() -> Void)?; init(_ work: @escaping () -> Void) { self.work = work } }

    init(_ base: any EventLoop) { self.base = base }

    var now: Instant { base.now }

    @discardableResult
    func schedule(at deadline: Instant, _ work: @escaping () -> Void) -> Scheduled {
        let (id, box) = hold(work)
        return base.schedule(at: deadline) { [weak self] in self?.run(id, box) }
    }

    func execute(_ work: @escaping () -> Void) {
        let (id, box) = hold(work)
        base.execute { [weak self] in self?.run(id, box) }
    }

    /// The process dies: nothing it scheduled runs.
    func kill() {
        isAlive = false
        for box in pending.values { box.work = nil }
        pending = [:]
    }

    private func hold(_ work: @escaping () -> Void) -> (Int, Box) {
        let box = Box(work)
        nextID += 1
        if isAlive { pending[nextID] = box } else { box.work = nil }
        return (nextID, box)
    }

    private func run(_ id: Int, _ box: Box) {
        pending[id] = nil
        guard isAlive, let work = box.work else { return }
        box.work = nil
        work()
    }
}

/// The lock's chip as the household watches it: every rise of the unlock line is reported
/// (the edge audit's input), everything else passes through.
final class WatchedChip: GPIOChip {
    let chip: any GPIOChip
    let watchedLine: String
    let onRise: () -> Void

    init(_ chip: any GPIOChip, line: String, onRise: @escaping () -> Void) {
        self.chip = chip; self.watchedLine = line; self.onRise = onRise
    }

    var label: String { chip.label }
    var debouncesInputs: Bool { chip.debouncesInputs }

    func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput {
        let output = try chip.requestOutput(line, config)
        return line == watchedLine ? WatchedOutput(output, onRise: onRise) : output
    }

    func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput {
        try chip.requestInput(line, config)
    }

    private final class WatchedOutput: GPIOOutput {
        let output: any GPIOOutput
        let onRise: () -> Void
        init(_ output: any GPIOOutput, onRise: @escaping () -> Void) { self.output = output; self.onRise = onRise }
        var name: String { output.name }
        var isActive: Bool { output.isActive }
        func set(_ active: Bool) throws(GPIOError) {
            let rose = active && !output.isActive
            try output.set(active)
            if rose { onRise() }
        }
    }
}
