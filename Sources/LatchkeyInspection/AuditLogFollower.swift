import LatchkeyControl
import LatchkeyPosix
import LatchkeyStore
import LatchkeyTransport

/// `latchkey log --follow`: prints each entry the lock agent appends, as it is committed. No
/// polling while the agent is quiet: inotify on the state directory wakes the loop when the
/// agent writes its database. A wake-up can come before its commit is readable (SQLite
/// publishes the commit in the WAL index, shared memory, after the write the event reports),
/// so each wake-up, and the start, also schedules a few re-reads (`settleDelays`, the last far
/// above an SD card's fsync): a bounded burst after a write, nothing while the log is quiet.
public final class AuditLogFollower {
    /// After a wake-up, when to read again (from the wake-up).
    public static let settleDelays: [Duration] = [.milliseconds(20), .milliseconds(200), .seconds(2)]

    private let inspection: LockInspection
    private let loop: PosixEventLoop
    private var watch: DirectoryWatch?
    private var settling: [Scheduled] = []
    public private(set) var lastSequence: UInt64
    private let onEntry: (LoggedEvent) -> Void
    /// A read that failed: the follower stops (the caller ends the loop and reports it).
    public var onError: ((RuntimeError) -> Void)?

    /// Follows from after `lastSequence` (what the caller already printed).
    public init(_ inspection: LockInspection, after lastSequence: UInt64, loop: PosixEventLoop,
                onEntry: @escaping (LoggedEvent) -> Void) throws(RuntimeError) {
        self.inspection = inspection
        self.loop = loop
        self.lastSequence = lastSequence
        self.onEntry = onEntry
        do {
            // .modify: WAL and checkpoint writes; .create/.movedTo: a WAL started afresh.
            watch = try DirectoryWatch(directories: [inspection.directory], events: [.modify, .create, .movedTo],
                                       loop: loop) { [weak self] in self?.wake() }
        } catch {
            throw RuntimeError("cannot watch \(inspection.directory) for new events: \(error)")
        }
        settle()
    }

    /// Prints whatever was appended since the last entry printed.
    public func catchUp() throws(RuntimeError) {
        for entry in try inspection.entries(after: lastSequence) {
            lastSequence = entry.sequence
            onEntry(entry)
        }
    }

    private func wake() {
        settle()
        read()
    }

    private func settle() {
        settling.forEach { $0.cancel() }
        settling = Self.settleDelays.map { delay in loop.schedule(after: delay) { [weak self] in self?.read() } }
    }

    private func read() {
        do { try catchUp() } catch { stop(error) }
    }

    private func stop(_ error: RuntimeError) {
        guard watch != nil else { return }
        watch?.cancel()
        watch = nil
        settling.forEach { $0.cancel() }
        settling = []
        onError?(error)
    }

    deinit { settling.forEach { $0.cancel() } }
}
