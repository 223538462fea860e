#if canImport(Glibc)
import Glibc
#endif

/// The one errno policy of every C call Latchkey makes (swift-nio's
/// `syscall(blocking:where:_:)`), shared by LatchkeyPosix and LatchkeyKernel:
/// - EINTR is retried (a signal arrived; the call did nothing);
/// - EAGAIN/EWOULDBLOCK is `.wouldBlock`, a normal answer on a non-blocking fd;
/// - EBADF/EFAULT are programming errors (a closed or bogus fd/pointer) and trap;
/// - anything else is a `SystemError` naming the call.
/// `close` is the exception: Linux always releases the fd, so it is never retried.
public enum ErrnoPolicy {
    /// Runs `body` (a C call returning -1 and setting errno on failure) under the policy.
    public static func call(_ name: @autoclosure () -> String, _ body: () -> Int) throws(SystemError) -> IOResult<Int> {
        while true {
            let result = body()
            if result != -1 { return .done(result) }
            let code = Errno(rawValue: errno)
            switch code {
            case .interrupted: continue
            case .wouldBlock: return .wouldBlock
            case .badFileDescriptor, .badAddress:
                preconditionFailure("\(name()): \(code) — a closed or invalid descriptor is a bug")
            default: throw SystemError(code, call: name())
            }
        }
    }

    /// As `call`, for calls on which "would block" cannot happen or is itself an error.
    public static func blocking(_ name: @autoclosure () -> String, _ body: () -> Int) throws(SystemError) -> Int {
        switch try call(name(), body) {
        case .done(let value): return value
        case .wouldBlock: throw SystemError(.wouldBlock, call: name())
        }
    }
}
