/// A keeper of descriptors that outlives this process: systemd's file descriptor store
/// (`SystemdDescriptorStore`) or, in tests, LatchkeyTestKit's `SimulatedDescriptorStore`.
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
