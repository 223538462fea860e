#if canImport(Glibc)
import Glibc
#endif
import LatchkeyLock
import LatchkeyPosix

/// Wakes the loop when the demo or a test writes a simulated input line's `pull` file, so
/// the file-backed GPIO chip reports edges without polling (inotify on each line's
/// directory; the file chip writes by rename, hence IN_MOVED_TO as well as IN_CLOSE_WRITE).
final class FileChipWatcher {
    private let fd: CInt
    private var watch: Watch?
    private let chip: FileGPIOChip

    init(chip: FileGPIOChip, loop: PosixEventLoop, onError: @escaping (String) -> Void) throws(RuntimeError) {
        self.chip = chip
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw RuntimeError("inotify_init1 failed: errno \(errno)") }
        for dir in chip.lineDirectories {
            if inotify_add_watch(fd, dir, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO)) < 0 {
                throw RuntimeError("inotify_add_watch(\(dir)) failed: errno \(errno)")
            }
        }
        watch = loop.watch(fd: fd, events: .readable) { [weak self] _ in
            guard let self else { return }
            self.drain()
            do { try self.chip.pollInputs() } catch { onError("\(error)") }
        }
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }

    deinit {
        watch?.cancel()
        close(fd)
    }
}
