#if canImport(Glibc)
import Glibc
#endif

/// inotify(7) on a few directories: `onChange` runs on the loop after the kernel reports one
/// of `events` in any of them. The events themselves are read and dropped: every user
/// re-reads what it follows (a simulated chip's input files, a line's edge log, the lock's
/// database), which never misses an event the kernel coalesced or an overflowed queue.
public final class DirectoryWatch {
    public struct Events: OptionSet, Sendable {
        public var rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// A file was written (an append, a SQLite WAL frame).
        public static let modify = Events(rawValue: UInt32(IN_MODIFY))
        /// A file opened for writing was closed.
        public static let closeWrite = Events(rawValue: UInt32(IN_CLOSE_WRITE))
        /// A file was created.
        public static let create = Events(rawValue: UInt32(IN_CREATE))
        /// A file was renamed into the directory (an atomic replace).
        public static let movedTo = Events(rawValue: UInt32(IN_MOVED_TO))
    }

    private let fd: CInt
    private var watch: Watch?

    public init(directories: [String], events: Events, loop: PosixEventLoop,
                onChange: @escaping () -> Void) throws(SystemError) {
        fd = CInt(try Syscalls.blocking("inotify_init1") { Int(inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))) })
        for directory in directories {
            do {
                _ = try Syscalls.blocking("inotify_add_watch(\(directory))") { Int(inotify_add_watch(fd, directory, events.rawValue)) }
            } catch {
                Syscalls.close(fd)
                throw error
            }
        }
        watch = loop.watch(fd: fd, events: .readable) { [weak self] _ in
            guard let self else { return }
            self.drain()
            onChange()
        }
    }

    /// Reads every pending event. A read error other than "nothing more" (EAGAIN) cannot
    /// happen on an inotify fd we own; it ends the drain like EAGAIN does.
    private func drain() {
        while case .done(let bytes)? = try? Syscalls.read(fd, capacity: 4096), !bytes.isEmpty {}
    }

    /// Stops watching; `onChange` is not called again. Idempotent.
    public func cancel() {
        watch?.cancel()
        watch = nil
    }

    deinit {
        watch?.cancel()
        Syscalls.close(fd)
    }
}
