#if canImport(Glibc)
import Glibc
#endif

/// systemd's file descriptor store (systemd.io, "The File Descriptor Store"; sd_notify(3),
/// sd_listen_fds(3)) without libsystemd: `FDSTORE=1` with `FDNAME=` and the descriptor as
/// SCM_RIGHTS on `$NOTIFY_SOCKET` keeps a copy in PID 1, `FDSTOREREMOVE=1` with `FDNAME=`
/// closes it there, and what PID 1 still holds when it starts the service again arrives as
/// `$LISTEN_FDS` descriptors from fd 3 with `$LISTEN_FDNAMES`, for the process `$LISTEN_PID`.
/// PID 1 keeps the store across an automatic restart only, and only up to the unit's
/// `FileDescriptorStoreMax=` (0 by default: it closes what it is sent); it drops a stored
/// descriptor that shows POLLHUP or POLLERR.
public final class SystemdDescriptorStore: DescriptorStore {
    /// The first descriptor systemd passes (SD_LISTEN_FDS_START).
    public static let firstHandedDescriptor: CInt = 3
    private let sender: UnixDatagramSender
    private var handed: [HandedDescriptor]
    /// What went wrong taking the handed descriptors (each closed, or left to the process).
    public private(set) var handingFaults: [String] = []

    /// nil outside systemd (`$NOTIFY_SOCKET` unset, or no socket can be made for it): then
    /// nothing is kept and nothing is handed. The handed descriptors are made close-on-exec
    /// here, before anything can start a child process.
    /// `firstDescriptor`: where the handed descriptors start (SD_LISTEN_FDS_START; tests move it).
    public init?(environment: [String: String], pid: Int32 = getpid(), firstDescriptor: CInt = firstHandedDescriptor) {
        guard let path = environment["NOTIFY_SOCKET"], let sender = UnixDatagramSender(path: path) else { return nil }
        self.sender = sender
        handed = []
        let names = environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        guard environment["LISTEN_PID"].flatMap(Int32.init) == pid,
              let count = environment["LISTEN_FDS"].flatMap(Int32.init), count > 0 else { return }
        for index in 0..<count {
            let fd = firstDescriptor + index
            do {
                try Syscalls.setCloseOnExec(fd)
                handed.append(HandedDescriptor(name: Int(index) < names.count ? names[Int(index)] : "unknown", fileDescriptor: fd))
            } catch {
                handingFaults.append("fd \(fd): \(error)")
            }
        }
    }

    public func takeHanded() -> [HandedDescriptor] {
        defer { handed = [] }
        return handed
    }

    public func keep(_ fd: CInt, name: String) throws(SystemError) {
        precondition(Self.isValidName(name), "invalid descriptor name \(name)")
        try sender.send(Array("FDSTORE=1\nFDNAME=\(name)".utf8), passing: fd)
    }

    public func remove(name: String) throws(SystemError) {
        guard sender.send(Array("FDSTOREREMOVE=1\nFDNAME=\(name)".utf8)) else {
            throw SystemError(.brokenPipe, call: "sendto(NOTIFY_SOCKET, FDSTOREREMOVE=1 FDNAME=\(name))")
        }
    }
}
