#if canImport(Glibc)
import Glibc
#endif

/// The few file-system calls the store makes itself, in one place (ANCHORS (b) 5): the
/// state directory and the database file get their modes here, before SQLite sees them.
///
/// docs/LOCK-RULES.md rule 7: keys and the store live in a 0700 state directory owned by the
/// service user; the database file is 0600 (SQLite gives its -wal and -shm the same mode).
enum StoreFiles {
    static let directoryMode: mode_t = 0o700
    static let fileMode: mode_t = 0o600

    /// Creates `path` with mode 0700 if missing. An existing directory that grants group or
    /// other access is tightened when it is ours and not a shared (sticky) directory such
    /// as /tmp — systemd's StateDirectory= defaults to 0755 — and refused otherwise.
    static func prepareDirectory(_ path: String) throws(StoreError) {
        if mkdir(path, directoryMode) == 0 {
            // mkdir's mode passes through the umask; state it exactly.
            try changeMode(path, to: directoryMode)
            return
        }
        let error = errno
        guard error == EEXIST else { throw .fileSystem(path: path, call: "mkdir", errno: error) }
        var info = stat()
        guard stat(path, &info) == 0 else { throw .fileSystem(path: path, call: "stat", errno: errno) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .fileSystem(path: path, call: "mkdir", errno: ENOTDIR) }
        let permissions = info.st_mode & 0o7777
        guard permissions & 0o077 != 0 else { return }
        guard info.st_uid == geteuid(), permissions & S_ISVTX == 0 else {
            throw .insecureDirectory(path: path, mode: UInt32(permissions))
        }
        try changeMode(path, to: directoryMode)
    }

    /// Creates the database file with mode 0600 before SQLite opens it (SQLite would use
    /// 0644 less the umask), or brings an existing one back to 0600.
    static func prepareFile(_ path: String) throws(StoreError) {
        let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, fileMode)
        guard fd >= 0 else { throw .fileSystem(path: path, call: "open", errno: errno) }
        let result = fchmod(fd, fileMode)
        let error = errno
        close(fd)
        guard result == 0 else { throw .fileSystem(path: path, call: "fchmod", errno: error) }
    }

    /// For a read-only open: the directory and the file must already be there; nothing is
    /// created. A missing directory is most often a typo, a missing file a directory that
    /// belongs to another agent (the phone's) or to no agent at all.
    static func requireExisting(directory: String, file: String) throws(StoreError) {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            let error = errno
            throw .notAStore(path: directory, reason: error == ENOENT ? "no such directory"
                                 : error == EACCES ? "permission denied" : "cannot read the directory (errno \(error))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .notAStore(path: directory, reason: "not a directory") }
        guard stat(file, &info) == 0 else {
            let error = errno
            throw .notAStore(path: file, reason: error == ENOENT ? "no such file; is \(directory) an agent's state directory?"
                                 : error == EACCES ? "permission denied" : "errno \(error)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notAStore(path: file, reason: "not a regular file") }
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Permission bits of `path`, or nil if it cannot be stat'ed.
    static func mode(of path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// Bytes an unprivileged writer may still use on the file system holding `path`
    /// (statvfs: f_bavail blocks of f_frsize), or nil when it cannot be asked.
    static func freeBytes(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    static func rename(_ source: String, to target: String) throws(StoreError) {
        guard Glibc.rename(source, target) == 0 else {
            throw .fileSystem(path: source, call: "rename", errno: errno)
        }
    }

    /// fsync of the directory holding `path`, so a rename survives a power cut (rename(2)
    /// is atomic but not durable on its own).
    static func syncDirectory(of path: String) throws(StoreError) {
        let directory = Self.directory(of: path)
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .fileSystem(path: directory, call: "open", errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw .fileSystem(path: directory, call: "fsync", errno: errno) }
    }

    /// The directory part of `path`: "." for a bare name, "/" for a file in the root.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func changeMode(_ path: String, to mode: mode_t) throws(StoreError) {
        guard chmod(path, mode) == 0 else { throw .fileSystem(path: path, call: "chmod", errno: errno) }
    }
}

extension StoreFiles {
    /// Appends `line` and a newline to `path` (created 0600 if missing), in one write(2).
    static func appendLine(_ line: String, to path: String) throws(StoreError) {
        let fd = open(path, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, fileMode)
        guard fd >= 0 else { throw .fileSystem(path: path, call: "open", errno: errno) }
        defer { close(fd) }
        let bytes = Array((line + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw .fileSystem(path: path, call: "write", errno: written < 0 ? errno : EIO) }
    }

    /// The lines of `path`, or none when it does not exist. Small files only (read whole).
    static func lines(of path: String) throws(StoreError) -> [Substring] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let error = errno
            if error == ENOENT { return [] }
            throw .fileSystem(path: path, call: "open", errno: error)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .fileSystem(path: path, call: "read", errno: errno)
            }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n")
    }
}
