/// Names in a directory, without "." and ".."; empty when it cannot be read (for lookups
/// such as board definitions and /proc, where "absent" and "unreadable" mean the same).
public func directoryEntries(_ path: String) -> [String] {
    Syscalls.directoryEntries(path)
}
