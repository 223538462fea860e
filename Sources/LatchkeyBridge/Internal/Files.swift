#if canImport(Glibc)
import Glibc
#endif

/// Every C call of this module: small files written atomically and durably.
public enum Files {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The file's bytes, or nil when it does not exist.
    static func read(_ path: String) throws(Failure) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw Failure(description: "cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { return bytes }
            bytes += buffer[0..<n]
        }
    }

    /// Replaces `path` with `bytes`: a temporary file, fsync, rename, fsync of the directory,
    /// so after a crash the file holds the old contents or the new, never a mix.
    static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o600) throws(Failure) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(description: "cannot create \(temporary): \(String(cString: strerror(errno)))") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let why = String(cString: strerror(errno))
                close(fd)
                throw Failure(description: "cannot write \(temporary): \(why)")
            }
            offset += n
        }
        guard fsync(fd) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "cannot sync \(temporary): \(why)")
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            throw Failure(description: "cannot rename \(temporary): \(String(cString: strerror(errno)))")
        }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let dfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { _ = fsync(dfd); close(dfd) }  // the rename's durability; a failure here is not worth a lost event
    }

    /// Creates `path` (mode 0700) unless it exists.
    static func makeDirectory(_ path: String) throws(Failure) {
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Seconds since the Unix epoch (CLOCK_REALTIME), for command timestamps.
    public static func wallSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

/// Where the bridge remembers the last event the broker acknowledged, per agent: one
/// decimal number. Written before the next event is counted as delivered, so a restarted
/// bridge resumes after it (at-least-once: an event acknowledged but not yet recorded, or one
/// whose PUBACK a lost connection took with it, is published again, with the same `seq`,
/// which is how a consumer recognises it).
public struct CursorFile: Sendable {
    public let path: String
    public init(path: String) { self.path = path }

    public func load() throws -> UInt64 {
        guard let bytes = try Files.read(path) else { return 0 }
        let text = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        guard let value = UInt64(text) else { throw Files.Failure(description: "\(path) holds no sequence number: '\(text)'") }
        return value
    }

    public func save(_ sequence: UInt64) throws {
        try Files.replace(path, with: Array("\(sequence)\n".utf8))
    }
}
