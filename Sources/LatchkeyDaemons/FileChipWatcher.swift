import LatchkeyControl
import LatchkeyLock
import LatchkeyPosix
import LatchkeySimGPIO

/// Wakes the loop when the demo or a test writes a simulated input line's `pull` file, so
/// the file-backed GPIO chip reports edges without polling (inotify on each line's
/// directory; the file chip writes by rename, hence IN_MOVED_TO as well as IN_CLOSE_WRITE).
final class FileChipWatcher {
    private var watch: DirectoryWatch?
    private let chip: FileGPIOChip

    init(chip: FileGPIOChip, loop: PosixEventLoop, onError: @escaping (String) -> Void) throws(RuntimeError) {
        self.chip = chip
        do {
            watch = try DirectoryWatch(directories: chip.lineDirectories, events: [.closeWrite, .movedTo], loop: loop) { [weak chip] in
                do { try chip?.pollInputs() } catch { onError("\(error)") }
            }
        } catch {
            throw RuntimeError("cannot watch the simulated GPIO chip's lines: \(error)")
        }
    }
}
