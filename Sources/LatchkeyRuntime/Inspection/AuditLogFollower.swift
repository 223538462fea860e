#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import LatchkeyStore

/// `latchkey log --follow`: prints each entry the lock agent appends, as it is committed.
///
/// No polling: inotify on the state directory wakes the event loop when the agent writes
/// its database (a commit writes the WAL, `lock.db-wal`; a checkpoint writes `lock.db`),
/// and each wake-up reads whatever came after the last sequence printed. A wake-up with
/// nothing new (the agent wrote its journal, or a checkpoint) prints nothing.
public final class AuditLogFollower {
    private let inspection: LockInspection
    private let fd: CInt
    private var watch: Watch?
    public private(set) var lastSequence: UInt64
    private let onEntry: (LoggedEvent) -> Void
    /// A read that failed: the follower stops (the caller ends the loop and reports it).
    public var onError: ((RuntimeError) -> Void)?

    /// Follows from after `lastSequence` (what the caller already printed).
    public init(_ inspection: LockInspection, after lastSequence: UInt64, loop: PosixEventLoop,
                onEntry: @escaping (LoggedEvent) -> Void) throws(RuntimeError) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw RuntimeError("inotify_init1 failed: errno \(errno)") }
        // IN_MODIFY: WAL and checkpoint writes; IN_CREATE/IN_MOVED_TO: a WAL started afresh.
        guard inotify_add_watch(fd, inspection.directory, UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO)) >= 0 else {
            let error = errno
            close(fd)
            throw RuntimeError("cannot watch \(inspection.directory) for new events (inotify_add_watch: errno \(error))")
        }
        self.fd = fd
        self.inspection = inspection
        self.lastSequence = lastSequence
        self.onEntry = onEntry
        watch = loop.watch(fd: fd, events: .readable) { [weak self] _ in self?.wake() }
    }

    /// Prints whatever was appended since the last entry printed.
    public func catchUp() throws(RuntimeError) {
        for entry in try inspection.entries(after: lastSequence) {
            lastSequence = entry.sequence
            onEntry(entry)
        }
    }

    private func wake() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
        do { try catchUp() } catch {
            watch?.cancel()
            watch = nil
            onError?(error)
        }
    }

    deinit {
        watch?.cancel()
        close(fd)
    }
}
