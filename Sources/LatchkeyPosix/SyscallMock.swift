#if ENABLE_MOCKING
/// The syscall mocking hook of debug builds (swift-system's `Internals/Mocking.swift`): while
/// a test runs inside `SyscallMock.with(_:_:)`, every C call made through a `SyscallNamespace`
/// (LatchkeyKernel's, LatchkeyLibgpiod's) is recorded by its function name, and a call can be
/// made to fail with a chosen errno before the real call runs: the errno policy shown at work
/// (EINTR retried, EAGAIN "would block", EAFNOSUPPORT "no Bluetooth") on any kernel. The mock
/// is task-local: each test installs its own. `@unchecked Sendable` because only the task that
/// installed it touches it, from the one thread that runs that test's event loop.
package final class SyscallMock: @unchecked Sendable {
    /// C function names in call order (a retried call appears once per attempt).
    package private(set) var trace: [String] = []
    private var failures: [String: [Errno]] = [:]

    @TaskLocal package static var current: SyscallMock?

    package init() {}

    /// Runs `body` with `mock` installed.
    package static func with<T>(_ mock: SyscallMock, _ body: () throws -> T) rethrows -> T {
        try $current.withValue(mock, operation: body)
    }

    /// The next calls of `function` fail with `errnos`, one per call, in order.
    package func fail(_ function: String, with errnos: Errno...) {
        failures[function, default: []] += errnos
    }

    /// Records a call; returns the errno it must fail with, if one is queued.
    package func intercept(_ function: String) -> Errno? {
        trace.append(function)
        guard var queued = failures[function], !queued.isEmpty else { return nil }
        let errno = queued.removeFirst()
        failures[function] = queued
        return errno
    }
}
#endif
