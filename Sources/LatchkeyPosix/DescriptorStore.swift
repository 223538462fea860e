/// A keeper of descriptors that outlives this process: systemd's file descriptor store
/// (`SystemdDescriptorStore`) or, in tests and simulated runs, `SimulatedDescriptorStore`.
/// What is kept is handed back to the next process of the same service at its start.
///
/// The keeper holds its own copy: closing ours no longer closes the open file (for a
/// socket, no longer ends its connection) until the keeper is told to `remove` it.
public protocol DescriptorStore: AnyObject {
    /// What the keeper handed this process at its start, each once: the caller owns (and
    /// must close) every descriptor it takes. Each is close-on-exec.
    func takeHanded() -> [HandedDescriptor]
    /// Asks the keeper to hold a copy of `fd` under `name` (printable ASCII, no `:`).
    func keep(_ fd: CInt, name: String) throws(SystemError)
    /// Asks the keeper to close and forget every copy held under `name`.
    func remove(name: String) throws(SystemError)
}

/// A descriptor a keeper handed back, with the name it was kept under.
public struct HandedDescriptor: Equatable, Sendable {
    public var name: String
    public var fileDescriptor: CInt
    public init(name: String, fileDescriptor: CInt) { self.name = name; self.fileDescriptor = fileDescriptor }
}

extension DescriptorStore {
    /// Whether `name` can name a kept descriptor: systemd refuses names longer than 255
    /// bytes, with control characters or `:` (its LISTEN_FDNAMES separator).
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255
            && name.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }
    }
}

/// The simulated keeper: holds a duplicate of each descriptor it is given, as PID 1 does,
/// and hands duplicates back to the next "process" (`restart()`), close-on-exec. Tests
/// and simulated runs use it to kill a holder without losing what it kept.
public final class SimulatedDescriptorStore: DescriptorStore {
    /// What it holds, by name, in the order it was given.
    public private(set) var held: [(name: String, fileDescriptor: CInt)] = []
    private var handed: [HandedDescriptor] = []
    /// Every name removed, in order (what the keeper was told, for tests).
    public private(set) var removed: [String] = []
    /// When set, `keep` fails with it (a keeper that is gone or full).
    public var keepFailure: SystemError?

    public init() {}

    deinit { for entry in held { Syscalls.close(entry.fileDescriptor) } }

    public func takeHanded() -> [HandedDescriptor] {
        defer { handed = [] }
        return handed
    }

    public func keep(_ fd: CInt, name: String) throws(SystemError) {
        if let keepFailure { throw keepFailure }
        precondition(Self.isValidName(name), "invalid descriptor name \(name)")
        held.append((name, try Syscalls.duplicate(fd)))
    }

    public func remove(name: String) throws(SystemError) {
        removed.append(name)
        for entry in held where entry.name == name { Syscalls.close(entry.fileDescriptor) }
        held.removeAll { $0.name == name }
    }

    /// The holder died and the service is started again: what is held is handed to the next
    /// process as fresh descriptors (the keeper keeps its own), in the order it was kept.
    public func restart() throws(SystemError) {
        for entry in handed { Syscalls.close(entry.fileDescriptor) }
        handed = []
        for entry in held { handed.append(HandedDescriptor(name: entry.name, fileDescriptor: try Syscalls.duplicate(entry.fileDescriptor))) }
    }

    /// A deliberate stop: the keeper closes everything (systemd drops the store at a stop).
    public func stop() {
        for entry in held { Syscalls.close(entry.fileDescriptor) }
        held = []
    }

    /// Whether FD_CLOEXEC is set on `fd` (for tests of what the holder does with what it took).
    public static func isCloseOnExec(_ fd: CInt) -> Bool { (try? Syscalls.isCloseOnExec(fd)) ?? false }
}
