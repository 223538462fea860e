/// Files that hold a secret (a phone's key): written so that no other user can read them at
/// any moment, no half-written file is ever seen under the name, and the content is on the
/// disk when `write` returns (docs/SECURITY.md, "Secret files").
public enum SecretFile {
    /// Writes `bytes` to `path`: a new temporary file beside it (O_CREAT|O_EXCL|O_NOFOLLOW,
    /// mode 0600), written, fsynced, renamed over `path`, then the directory fsynced so the
    /// rename survives a power cut. A failure removes the temporary file and leaves `path` as
    /// it was.
    public static func write(_ bytes: [UInt8], to path: String) throws(SystemError) {
        let temporary = path + ".tmp-\(UInt32.random(in: 0...UInt32.max))"
        let fd = try Syscalls.createExclusive(temporary, mode: 0o600)
        do throws(SystemError) {
            defer { Syscalls.close(fd) }
            try Syscalls.writeAll(fd, bytes, path: temporary)
            try Syscalls.fsync(fd, path: temporary)
        } catch {
            Syscalls.unlink(temporary)
            throw error
        }
        do throws(SystemError) { try Syscalls.rename(temporary, path) } catch {
            Syscalls.unlink(temporary)
            throw error
        }
        let directory = Self.directory(of: path)
        let dir = try Syscalls.openDirectory(directory)
        defer { Syscalls.close(dir) }
        try Syscalls.fsync(dir, path: directory)
    }

    /// Why `path` may not hold a secret — not a regular file (a symbolic link, say), or
    /// readable or writable by group or others — with the command that fixes it; nil when it
    /// is fine or does not exist (reading it will say so).
    public static func exposure(of path: String) -> String? {
        let mode: (mode: UInt32, isRegular: Bool)?
        do { mode = try Syscalls.fileMode(path) } catch { return "cannot check \(path): \(error)" }
        guard let mode else { return nil }
        guard mode.isRegular else { return "\(path) is not a regular file (a symbolic link?); write the key there itself" }
        guard mode.mode & 0o077 == 0 else {
            return "\(path) has mode \(String(mode.mode, radix: 8)): group or others can read or change the key; "
                + "run `chmod 600 \(path)`"
        }
        return nil
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// Whether a file descriptor is a terminal (isatty(3)): `latchkey pair` asks the owner only
/// when someone can answer.
public enum Terminal {
    public static var standardInputIsInteractive: Bool { Syscalls.isTerminal(0) }

    /// Prints `line` and flushes it: `latchkey pair` runs for minutes, and whoever reads its
    /// output through a pipe or a file (a script waiting for the code) must see each line.
    public static func printFlushed(_ line: String, terminator: String = "\n") {
        print(line, terminator: terminator)
        Syscalls.flushStandardOutput()
    }
}

extension SecretFile {
    /// Removes a secret file written for a key that was not committed after all.
    public static func remove(_ path: String) { Syscalls.unlink(path) }
}
