/// Where per-user runtime files (sockets) live, and scratch directories for them.
public enum RuntimeDirectory {
    /// `$XDG_RUNTIME_DIR` (XDG Base Directory spec: per-user, mode 0700, on tmpfs), else
    /// `/tmp`. Socket paths must stay short: `sun_path` holds 107 bytes (unix(7)).
    public static var base: String {
        if let dir = Syscalls.environment("XDG_RUNTIME_DIR"), dir.hasPrefix("/") { return dir }
        return "/tmp"
    }

    /// `<base>/<name>`, created with mode 0700 if missing.
    public static func make(_ name: String) throws(SystemError) -> String {
        let path = base + "/" + name
        do throws(SystemError) {
            try Syscalls.makeDirectory(path, mode: 0o700)
        } catch where error.errno == Errno(rawValue: 17) {}  // EEXIST: already there
        return path
    }

    /// Whether `path` is on a file system mounted read-only; nil when it cannot be asked.
    public static func isOnReadOnlyFileSystem(_ path: String) -> Bool? { Syscalls.isOnReadOnlyFileSystem(path) }

    /// `path` and any missing parents, each new one with mode 0700 (an existing one is left as it is).
    public static func makeAll(_ path: String) throws(SystemError) {
        var prefix = ""
        for part in path.split(separator: "/") {
            prefix += "/" + part
            do throws(SystemError) {
                try Syscalls.makeDirectory(prefix, mode: 0o700)
            } catch where error.errno == Errno(rawValue: 17) {}  // EEXIST: already there
        }
    }

    /// A fresh, private directory `/tmp/<prefix>-XXXXXX` (mkdtemp(3)); for tests and demos.
    public static func makeTemporary(prefix: String = "latchkey") throws(SystemError) -> String {
        try Syscalls.makeTemporaryDirectory(template: "/tmp/\(prefix)-XXXXXX")
    }

    /// Removes the files directly inside `path` (sockets, not subdirectories) and `path`.
    public static func remove(_ path: String) {
        for name in Syscalls.directoryEntries(path) { Syscalls.unlink(path + "/" + name) }
        Syscalls.removeDirectory(path)
    }
}
