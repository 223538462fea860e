/// A small file in memory (memfd_create(2)) whose size is sealed: what a process keeps
/// beside a descriptor in systemd's file descriptor store, so that it outlives the process
/// with the descriptor (docs/RESTORATION.md, "Links that outlive the agent").
/// Made close-on-exec, sized to `capacity` and sealed against growing, shrinking and
/// further sealing, so a file handed back under our name is recognised: only a memfd
/// carries seals, and only ours these, at this size. Its contents are replaced with one
/// pwrite(2) at offset 0 of at most a page: a process killed during it has either written
/// all of it or none (the kernel checks for a fatal signal between pages of a write).
public final class MemoryFile {
    public let fileDescriptor: CInt
    public let capacity: Int

    /// A new file of `capacity` bytes (zeros), sealed at that size. `name` shows in /proc.
    public init(name: String, capacity: Int) throws(SystemError) {
        precondition(capacity > 0 && capacity <= 4096, "one page at most: a write of it is all or nothing")
        let fd = try Syscalls.createMemoryFile(name: name)
        do {
            try Syscalls.resize(fd, to: capacity)
            try Syscalls.sealSize(fd)
        } catch {
            Syscalls.close(fd)
            throw error
        }
        fileDescriptor = fd
        self.capacity = capacity
    }

    /// Takes over `fd` (handed back by the descriptor store) if it is such a file of
    /// `capacity` bytes; throws otherwise, and the caller still owns `fd`.
    public init(adopting fd: CInt, capacity: Int) throws(SystemError) {
        let sealed: Bool
        do { sealed = try Syscalls.isSizeSealed(fd) } catch {
            throw SystemError(error.errno, call: "not a memory file: \(error.call)")
        }
        guard sealed else { throw SystemError(.invalidArgument, call: "a memory file without its size sealed") }
        let size = try Syscalls.fileSize(fd)
        guard size == capacity else {
            throw SystemError(.invalidArgument, call: "a memory file of \(size) bytes, not \(capacity)")
        }
        fileDescriptor = fd
        self.capacity = capacity
    }

    deinit { Syscalls.close(fileDescriptor) }

    /// Replaces the start of the file with `bytes` (the rest stays as it was).
    public func write(_ bytes: [UInt8]) throws(SystemError) {
        precondition(bytes.count <= capacity, "\(bytes.count) bytes do not fit a memory file of \(capacity)")
        try Syscalls.write(fileDescriptor, bytes, at: 0)
    }

    /// The whole file.
    public func read() throws(SystemError) -> [UInt8] {
        try Syscalls.read(fileDescriptor, count: capacity, at: 0)
    }
}
