#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyGPIO
import LatchkeyLock
import LatchkeySettings
import LatchkeySim
import LatchkeySimGPIO

/// The file-backed GPIO chip of a lock configured with `gpio.simulated_chip_root`, for
/// running the agents by hand without a board: the lock lays the chip out on its first
/// start, and `latchkey gpio-sim` shows what it drives and pulls its inputs.
public enum SimulatedChipLayout {
    /// Where the chip for `label` is laid out under `root`.
    public static func directory(root: String, label: String) -> String { root + "/" + label }

    /// Lays out the wiring's chip under `root` unless a chip with that label is already
    /// there (an existing chip is left as it is: its levels are the simulated world's).
    /// Every input starts at its inactive level — door closed, button released — so a
    /// fresh chip looks like a quiet door, not an open one (active-low inputs pulled up).
    /// Returns the directory it laid out, or nil when the chip existed.
    @discardableResult
    public static func ensure(root: String, wiring: LockWiring) throws(RuntimeError) -> String? {
        // No chip there yet (or unreadable): lay one out below, whose own errors are thrown.
        if (try? existingDirectory(root: root, label: wiring.chipLabel)) != nil { return nil }
        if mkdir(root, 0o755) != 0 && errno != EEXIST {
            throw RuntimeError("cannot make the simulated GPIO root \(root): \(String(cString: strerror(errno)))")
        }
        let directory = directory(root: root, label: wiring.chipLabel)
        let lines = wiring.namedLines.map(\.line)
        do {
            try FileGPIOChip.create(at: directory, label: wiring.chipLabel, lineNames: lines)
            let simulator = try FileGPIOSimulator(directory: directory)
            for input in inputs(of: wiring) where input.activeLow {
                try simulator.pull(input.line, high: true)
            }
        } catch {
            throw RuntimeError("cannot lay out the simulated GPIO chip at \(directory): \(error)")
        }
        return directory
    }

    /// The directory of the chip labelled `label` under `root`; the error names what is missing.
    public static func existingDirectory(root: String, label: String) throws(RuntimeError) -> String {
        do {
            guard let chip = try FileGPIOChipFinder(root: root, loop: ManualEventLoop()).chip(labelled: label)
                    as? FileGPIOChip else { throw RuntimeError("GPIO chip \(label) is not file-backed") }
            return chip.directory
        } catch let error as RuntimeError { throw error } catch {
            throw RuntimeError("\(error)")
        }
    }

    static func inputs(of wiring: LockWiring) -> [LockWiring.Input] {
        [wiring.door, wiring.button, wiring.boltLocked, wiring.boltUnlocked].compactMap { $0 }
    }
}

/// One line of a simulated chip as `latchkey gpio-sim show` prints it.
public struct SimulatedLineReport: Sendable, Hashable, CustomStringConvertible {
    public var line: String
    /// The configuration field that wires it (`door_line` …), or nil for a line the lock does not use.
    public var field: String?
    /// The level the lock drives (outputs) — the `value` file.
    public var valueHigh: Bool
    /// The level applied from outside (inputs) — the `pull` file.
    public var pullHigh: Bool
    public var consumer: String

    public var description: String {
        let role = field.map { " (\($0))" } ?? ""
        let holder = consumer.isEmpty ? "unused" : "held by \(consumer)"
        return "\(line)\(role): value \(valueHigh ? 1 : 0), pull \(pullHigh ? "up" : "down"), \(holder)"
    }
}

/// `latchkey gpio-sim`: the simulated side of the lock's file-backed chip.
public struct SimulatedChipTool {
    public let settings: LockSettings
    private let simulator: FileGPIOSimulator
    public let directory: String

    public init(_ settings: LockSettings) throws(RuntimeError) {
        guard let root = settings.simulatedGPIORoot else {
            throw RuntimeError("the lock configuration has no gpio.simulated_chip_root: its GPIO is a real chip (use gpioinfo/gpioset)")
        }
        self.settings = settings
        directory = try SimulatedChipLayout.existingDirectory(root: root, label: settings.wiring.chipLabel)
        do { simulator = try FileGPIOSimulator(directory: directory) } catch { throw RuntimeError("\(error)") }
    }

    public func report() throws(RuntimeError) -> [SimulatedLineReport] {
        let fields = Dictionary(settings.wiring.namedLines.map { ($0.line, $0.field) }, uniquingKeysWith: { a, _ in a })
        do {
            return try simulator.lineNames.map { line throws(GPIOError) in
                SimulatedLineReport(line: line, field: fields[line], valueHigh: try simulator.isHigh(line),
                                    pullHigh: try simulator.isPulledHigh(line), consumer: try simulator.consumer(of: line))
            }
        } catch { throw RuntimeError("\(error)") }
    }

    /// Drives an input from outside, as a door contact or a finger on the button would.
    /// `active` is the logical level (door open, button pressed); the physical pull follows
    /// the wiring's active-low flag.
    public func set(_ name: String, active: Bool) throws(RuntimeError) {
        let input = try wiredInput(name)
        do { try simulator.pull(input.line, high: active != input.activeLow) } catch { throw RuntimeError("\(error)") }
    }

    /// `door`, `button`, `bolt_locked`, `bolt_unlocked` (or the line's own name) → its wiring.
    func wiredInput(_ name: String) throws(RuntimeError) -> LockWiring.Input {
        let wiring = settings.wiring
        let named: [(String, LockWiring.Input?)] = [("door", wiring.door), ("button", wiring.button),
                                                    ("bolt_locked", wiring.boltLocked), ("bolt_unlocked", wiring.boltUnlocked)]
        for (role, input) in named {
            if let input, role == name || input.line == name { return input }
        }
        let known = named.compactMap { role, input in input.map { "\(role) (line \($0.line))" } }
        throw RuntimeError("'\(name)' is not a wired input; the lock's inputs: \(known.isEmpty ? "none" : known.joined(separator: ", "))")
    }
}
