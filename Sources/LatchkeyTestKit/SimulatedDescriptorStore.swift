import Glibc
import LatchkeyPosix

/// The simulated keeper: holds a duplicate of each descriptor it is given, as PID 1 does,
/// and hands duplicates back to the next "process" (`restart()`), close-on-exec. Tests
/// use it to kill a holder without losing what it kept.
public final class SimulatedDescriptorStore: DescriptorStore {
    /// What it holds, by name, in the order it was given.
    public private(set) var held: [(name: String, fileDescriptor: CInt)] = []
    private var handed: [HandedDescriptor] = []
    /// Every name removed, in order (what the keeper was told, for tests).
    public private(set) var removed: [String] = []
    /// When set, `keep` fails with it (a keeper that is gone or full).
    public var keepFailure: SystemError?

    public init() {}

    deinit { for entry in held { Glibc.close(entry.fileDescriptor) } }

    public func takeHanded() -> [HandedDescriptor] {
        defer { handed = [] }
        return handed
    }

    public func keep(_ fd: CInt, name: String) throws(SystemError) {
        if let keepFailure { throw keepFailure }
        precondition(Self.isValidName(name), "invalid descriptor name \(name)")
        held.append((name, try Self.duplicate(fd)))
    }

    public func remove(name: String) throws(SystemError) {
        removed.append(name)
        for entry in held where entry.name == name { Glibc.close(entry.fileDescriptor) }
        held.removeAll { $0.name == name }
    }

    /// The holder died and the service is started again: what is held is handed to the next
    /// process as fresh descriptors (the keeper keeps its own), in the order it was kept.
    public func restart() throws(SystemError) {
        for entry in handed { Glibc.close(entry.fileDescriptor) }
        handed = []
        for entry in held { handed.append(HandedDescriptor(name: entry.name, fileDescriptor: try Self.duplicate(entry.fileDescriptor))) }
    }

    /// A deliberate stop: the keeper closes everything (systemd drops the store at a stop).
    public func stop() {
        for entry in held { Glibc.close(entry.fileDescriptor) }
        held = []
    }

    /// Whether FD_CLOEXEC is set on `fd` (for tests of what the holder does with what it took).
    public static func isCloseOnExec(_ fd: CInt) -> Bool {
        let flags = fcntl(fd, F_GETFD)
        return flags >= 0 && flags & FD_CLOEXEC != 0
    }

    /// A second descriptor for the same open file, close-on-exec (fcntl never fails with EINTR here).
    private static func duplicate(_ fd: CInt) throws(SystemError) -> CInt {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw SystemError(Errno(rawValue: errno), call: "fcntl(F_DUPFD_CLOEXEC)") }
        return copy
    }
}
