import Glibc

/// Reads a whole file as UTF-8.
public func readTextFile(_ path: String) throws(RuntimeError) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw RuntimeError(String(cString: strerror(errno))) }
    defer { close(fd) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        // A failed read is an error, never a text cut short (a key read half is a wrong key).
        guard n >= 0 else { throw RuntimeError(String(cString: strerror(errno))) }
        guard n > 0 else { break }
        out += buffer[0..<n]
    }
    return String(decoding: out, as: UTF8.self)
}
