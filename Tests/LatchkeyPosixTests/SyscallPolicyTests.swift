#if canImport(Glibc)
import Glibc
#endif
import Testing

@testable import LatchkeyPosix

/// The one errno policy, exercised with a mock C call that sets errno like a real one.
@Suite struct SyscallPolicyTests {
    @Test func interruptedCallsAreRetried() throws {
        var calls = 0
        let result = try Syscalls.call("mock") { () -> Int in
            calls += 1
            if calls < 3 { errno = EINTR; return -1 }
            return 7
        }
        #expect(result == .done(7))
        #expect(calls == 3)
    }

    @Test func wouldBlockIsAResultNotAnError() throws {
        for code in [EAGAIN, EWOULDBLOCK] {
            let result = try Syscalls.call("mock") { () -> Int in errno = code; return -1 }
            #expect(result == .wouldBlock)
        }
    }

    @Test func otherErrorsCarryErrnoAndTheCall() {
        #expect(throws: SystemError(.connectionRefused, call: "connect(/x)")) {
            _ = try Syscalls.call("connect(/x)") { () -> Int in errno = ECONNREFUSED; return -1 }
        }
        #expect(throws: SystemError(.wouldBlock, call: "listen")) {
            _ = try Syscalls.blocking("listen") { () -> Int in errno = EAGAIN; return -1 }
        }
        #expect(SystemError(.connectionRefused, call: "connect(/x)").description
            == "connect(/x): Connection refused (errno 111)")
    }

    @Test func namedErrnosMatchTheCLibrary() {
        #expect(Errno.interrupted.rawValue == EINTR)
        #expect(Errno.wouldBlock.rawValue == EAGAIN)
        #expect(Errno.wouldBlock.rawValue == EWOULDBLOCK)
        #expect(Errno.addressInUse.rawValue == EADDRINUSE)
        #expect(Errno.connectionRefused.rawValue == ECONNREFUSED)
        #expect(Errno.brokenPipe.rawValue == EPIPE)
        #expect(Errno.messageTooLong.rawValue == EMSGSIZE)
        #expect(Errno.nameTooLong.rawValue == ENAMETOOLONG)
        #expect(Signal.user1.rawValue == SIGUSR1)
        #expect(Signal.terminate.rawValue == SIGTERM)
        #expect(Signal.terminalStop.rawValue == SIGTSTP)
        #expect(Signal.continue.rawValue == SIGCONT)
        #expect(Signal.child.rawValue == SIGCHLD)
    }
}
