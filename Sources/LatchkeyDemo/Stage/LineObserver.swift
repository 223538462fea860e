#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyPosix
import LatchkeySimGPIO
import LatchkeyTransport

/// Watches the simulated chip's output lines from outside the lock process, the way a
/// logic analyser would: every edge the lock drove, with the time the lock drove it, read
/// from each line's append-only edge log (`FileGPIOEdgeReader`). inotify only says when to
/// read; the log, not the wake-up, is the record, so a pulse shorter than the time between
/// two wake-ups is seen all the same. This is what the demo and the torture check — the GPIO
/// line itself, not the agent's word.
package final class LineObserver {
    /// One edge: `at` is the driving process's clock (CLOCK_MONOTONIC), as the kernel stamps
    /// a GPIO line event.
    package struct Change: Equatable { package var line: String; package var high: Bool; package var at: Instant }

    private let simulator: FileGPIOSimulator
    private var reader: FileGPIOEdgeReader
    private let lines: [String]
    private var watch: DirectoryWatch?
    package private(set) var levels: [String: Bool] = [:]
    package private(set) var changes: [Change] = []
    /// The first failure to read an edge log, if any: the record is incomplete from there on.
    package private(set) var readFailure: GPIOError?

    package init(chipDirectory: String, lines: [String], loop: PosixEventLoop) throws(RuntimeError) {
        do {
            simulator = try FileGPIOSimulator(directory: chipDirectory)
            reader = try FileGPIOEdgeReader(directory: chipDirectory)
        } catch {
            throw RuntimeError("GPIO simulator at \(chipDirectory): \(error)")
        }
        self.lines = lines
        // Watch the whole chip tree: each line<N>/ directory holds the edge log (IN_MODIFY on
        // an append) and the renamed value files.
        var dirs: [String] = []
        if let d = opendir(chipDirectory) {
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasPrefix("line") { dirs.append(chipDirectory + "/" + name) }
            }
            closedir(d)
        }
        do {
            watch = try DirectoryWatch(directories: dirs, events: [.modify, .closeWrite, .movedTo], loop: loop) { [weak self] in
                self?.sample()
            }
        } catch {
            throw RuntimeError("GPIO simulator at \(chipDirectory): \(error)")
        }
        // The levels before the observer began: the value files, then anything already logged.
        // A value file that cannot be read leaves its line unknown (nil) until its log says.
        for line in lines { levels[line] = try? simulator.isHigh(line) }
        sample(recording: false)
    }

    /// Reads every watched line's new edge-log entries and records each change of level.
    /// Called on each wake-up, and by anyone about to judge `changes` (catching up is cheap).
    package func sample() { sample(recording: true) }

    private func sample(recording: Bool) {
        for line in lines {
            let driven: [DrivenLevel]
            do { driven = try reader.newLevels(of: line) } catch {
                readFailure = readFailure ?? error
                continue
            }
            for level in driven where levels[line] != level.high {
                if recording { changes.append(Change(line: line, high: level.high, at: level.at)) }
                levels[line] = level.high
            }
        }
    }

    package func isHigh(_ line: String) -> Bool { levels[line] ?? false }

    /// The first change of `line` to `high` at or after `since`.
    package func rise(of line: String, since: Instant) -> Change? {
        changes.first { $0.line == line && $0.high && $0.at >= since }
    }

    package func pull(_ line: String, high: Bool) throws(RuntimeError) {
        do { try simulator.pull(line, high: high) } catch { throw RuntimeError("pull \(line): \(error)") }
    }

    deinit { watch?.cancel() }
}
