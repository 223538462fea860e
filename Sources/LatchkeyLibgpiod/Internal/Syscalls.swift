#if canImport(Glibc)
import Glibc
#endif
import CGPIOD
import LatchkeyPosix

/// Every C call LatchkeyLibgpiod makes, under the one errno policy and the debug builds'
/// mocking hook (`SyscallNamespace`): loading libgpiod at run time (dlopen, and dlsym of every
/// function the tables name), the GPIO devices in /dev, and the event fds' flags. libgpiod's
/// own functions are called through `Libgpiod1` / `Libgpiod2`, beside this file, each wrapped
/// in `call`, `blocking` or `pointer`. Callers turn the `SystemError` into a `GPIOError`.
enum Syscalls: SyscallNamespace {
    static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// dlopen(soname, RTLD_NOW | RTLD_LOCAL): the handle is kept for the process's life.
    /// A missing library is ENOENT naming dlerror()'s reason.
    static func loadLibrary(_ soname: String) throws(SystemError) -> UnsafeMutableRawPointer {
        var handle: UnsafeMutableRawPointer?
        var reason = ""
        do {
            _ = try blocking("dlopen", "(\(soname))") {
                handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL)
                if handle != nil { return 0 }
                reason = dlerror().map { String(cString: $0) } ?? "not found"
                errno = Errno.noSuchFileOrDirectory.rawValue
                return -1
            }
        } catch {
            throw SystemError(error.errno, call: reason.isEmpty ? error.call : reason)
        }
        return handle!
    }

    static func resolveGPIOD1(_ library: UnsafeMutableRawPointer, _ soname: String) throws(SystemError) -> latchkey_gpiod1 {
        var table = latchkey_gpiod1()
        if let missing = latchkey_gpiod1_resolve(library, &table) {
            throw SystemError(.noSuchFileOrDirectory, call: "dlsym(\(soname), \(String(cString: missing)))")
        }
        return table
    }

    static func resolveGPIOD2(_ library: UnsafeMutableRawPointer, _ soname: String) throws(SystemError) -> latchkey_gpiod2 {
        var table = latchkey_gpiod2()
        if let missing = latchkey_gpiod2_resolve(library, &table) {
            throw SystemError(.noSuchFileOrDirectory, call: "dlsym(\(soname), \(String(cString: missing)))")
        }
        return table
    }

    /// fcntl(F_SETFL, O_NONBLOCK) on an event fd, so events are read until EAGAIN.
    static func setNonBlocking(_ fd: CInt) throws(SystemError) {
        let flags = try blocking("fcntl", "(F_GETFL)") { Int(fcntl(fd, F_GETFL)) }
        _ = try blocking("fcntl", "(F_SETFL)") { Int(fcntl(fd, F_SETFL, Int32(flags) | O_NONBLOCK)) }
    }

    /// Names of the GPIO character devices in /dev ("gpiochip0", ...), sorted.
    static func gpioChipNames() -> [String] {
        guard let dir = opendir("/dev") else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix("gpiochip") { names.append(name) }
        }
        return names.sorted { $0.count != $1.count ? $0.count < $1.count : $0 < $1 }
    }
}

extension Errno {
    static let busy = Errno(rawValue: 16)                   // EBUSY
}
