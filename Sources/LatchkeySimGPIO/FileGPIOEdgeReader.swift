import LatchkeyGPIO
import LatchkeyTransport

/// One level a process drove on a file chip's output, as the line's edge log holds it.
public struct DrivenLevel: Hashable, Sendable {
    public var high: Bool
    /// On the driving process's loop clock (CLOCK_MONOTONIC for a real process).
    public var at: Instant

    public init(high: Bool, at: Instant) {
        self.high = high
        self.at = at
    }
}

/// Reads the edge logs of a file chip (`FileGPIOChip`) from outside the driving process,
/// losslessly: it keeps, per line, how far it has read and hands back each new entry once,
/// whole entries only (an entry still being appended waits for the next read). However late
/// or seldom it is called, every level driven since the last call comes back, in order, with
/// its time — a pulse between two calls included.
public struct FileGPIOEdgeReader {
    private let simulator: FileGPIOSimulator
    private var offsets: [String: Int] = [:]

    public init(directory: String) throws(GPIOError) {
        simulator = try FileGPIOSimulator(directory: directory)
    }

    /// The levels driven on `line` since the last call (since the log began, the first time).
    public mutating func newLevels(of line: String) throws(GPIOError) -> [DrivenLevel] {
        let start = offsets[line] ?? 0
        let bytes = try simulator.edgeLogBytes(line, from: start)
        guard let end = bytes.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
        var levels: [DrivenLevel] = []
        for entry in bytes[...end].split(separator: UInt8(ascii: "\n")) {
            let text = String(decoding: entry, as: UTF8.self)
            let fields = text.split(separator: " ")
            guard fields.count == 2, fields[0] == "0" || fields[0] == "1", let ns = Int64(fields[1]) else {
                throw GPIOError(.invalidValue, chip: simulator.label, line: line, detail: "edge log entry '\(text)'")
            }
            levels.append(DrivenLevel(high: fields[0] == "1", at: Instant(nanoseconds: ns)))
        }
        offsets[line] = start + end + 1
        return levels
    }
}
