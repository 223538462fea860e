#if canImport(Glibc)
import Glibc
#endif
import LatchkeyLock
import LatchkeyPosix
import LatchkeyTransport

/// Watches the simulated chip's output lines from outside the lock process, the way a
/// logic analyser would: every change of a `value` file is recorded with the time the demo
/// saw it. This is what the demo checks — the GPIO line itself, not the agent's word.
final class LineObserver {
    struct Change: Equatable { var line: String; var high: Bool; var at: Instant }

    private let simulator: FileGPIOSimulator
    private let lines: [String]
    private let loop: PosixEventLoop
    private var fd: CInt = -1
    private var watch: Watch?
    private(set) var levels: [String: Bool] = [:]
    private(set) var changes: [Change] = []

    init(chipDirectory: String, lines: [String], loop: PosixEventLoop) throws(RuntimeError) {
        do { simulator = try FileGPIOSimulator(directory: chipDirectory) } catch {
            throw RuntimeError("GPIO simulator at \(chipDirectory): \(error)")
        }
        self.lines = lines
        self.loop = loop
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw RuntimeError("inotify_init1: errno \(errno)") }
        // Watch the whole chip tree: line<N>/ directories receive the renamed value files.
        var dirs: [String] = []
        if let d = opendir(chipDirectory) {
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasPrefix("line") { dirs.append(chipDirectory + "/" + name) }
            }
            closedir(d)
        }
        for dir in dirs { _ = inotify_add_watch(fd, dir, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO)) }
        sample()
        watch = loop.watch(fd: fd, events: .readable) { [weak self] _ in
            guard let self else { return }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while buffer.withUnsafeMutableBytes({ read(self.fd, $0.baseAddress, $0.count) }) > 0 {}
            self.sample()
        }
    }

    /// Reads every watched line and records the ones that changed.
    func sample() {
        for line in lines {
            // A line file caught mid-rewrite is read again at the next sample.
            guard let high = try? simulator.isHigh(line) else { continue }
            if levels[line] != high {
                if levels[line] != nil { changes.append(Change(line: line, high: high, at: loop.now)) }
                levels[line] = high
            }
        }
    }

    func isHigh(_ line: String) -> Bool { levels[line] ?? false }

    /// The first change of `line` to `high` at or after `since`.
    func rise(of line: String, since: Instant) -> Change? {
        changes.first { $0.line == line && $0.high && $0.at >= since }
    }

    func pull(_ line: String, high: Bool) throws(RuntimeError) {
        do { try simulator.pull(line, high: high) } catch { throw RuntimeError("pull \(line): \(error)") }
    }

    deinit {
        watch?.cancel()
        if fd >= 0 { close(fd) }
    }
}
