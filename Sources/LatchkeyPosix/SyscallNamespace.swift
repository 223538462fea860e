#if canImport(Glibc)
import Glibc
#endif

/// The C-call core of the modules above this one that call C themselves (LatchkeyKernel's
/// Bluetooth sockets, LatchkeyLibgpiod's library): each keeps every C call in one namespace of
/// its own (its `Syscalls` enum) that conforms to this, and so runs each call under the one
/// errno policy (`ErrnoPolicy`) and behind the mocking hook of debug builds (`SyscallMock`),
/// keyed by the C function's name.
package protocol SyscallNamespace {}

extension SyscallNamespace {
    /// Runs `body` (returning -1 with errno on failure) under the policy and the hook.
    package static func call(_ function: String, _ context: @autoclosure () -> String = "",
                             _ body: () -> Int) throws(SystemError) -> IOResult<Int> {
        try ErrnoPolicy.call(function + context()) {
#if ENABLE_MOCKING
            if let forced = SyscallMock.current?.intercept(function) {
                errno = forced.rawValue
                return -1
            }
#endif
            return body()
        }
    }

    package static func blocking(_ function: String, _ context: @autoclosure () -> String = "",
                                 _ body: () -> Int) throws(SystemError) -> Int {
        switch try call(function, context(), body) {
        case .done(let value): return value
        case .wouldBlock: throw SystemError(.wouldBlock, call: function + context())
        }
    }

    /// For calls that return a pointer, NULL with errno on failure.
    package static func pointer(_ function: String, _ context: @autoclosure () -> String = "",
                                _ body: () -> OpaquePointer?) throws(SystemError) -> OpaquePointer {
        var result: OpaquePointer?
        _ = try blocking(function, context()) {
            result = body()
            return result == nil ? -1 : 0
        }
        return result!
    }
}
