#if canImport(Glibc)
import Glibc
import LatchkeySettings
#endif

/// Whether this process's standard error goes to journald: systemd sets `JOURNAL_STREAM` to
/// `DEVICE:INODE` of the stream it connected to stdout/stderr (systemd.exec(5)). Comparing
/// it with fstat(2) of fd 2 tells a service's own stream from a variable inherited by a
/// child whose stderr was redirected elsewhere (a shell run from the unit, a pipe).
public enum JournaldStream {
    public static func isConnected(environment: [String: String] = ProcessEnvironment.current,
                                   fd: CInt = STDERR_FILENO) -> Bool {
        guard let value = environment["JOURNAL_STREAM"], let (device, inode) = parse(value) else { return false }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// `"8:12345"` → (8, 12345).
    static func parse(_ value: String) -> (UInt64, UInt64)? {
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return nil }
        return (device, inode)
    }
}
