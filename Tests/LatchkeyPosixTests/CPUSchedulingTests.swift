import Foundation
import Testing
@testable import LatchkeyPosix
#if canImport(Glibc)
import Glibc
#endif

/// The lock's loop under SCHED_FIFO (`CPUScheduling`), on a thread of its own: the policy is
/// per thread, so the test process's other threads stay as they are.
struct CPUSchedulingTests {
    struct Seen: Sendable {
        var entered: SystemError?
        var now: CPUScheduling?
        var child: CPUScheduling?
    }

    /// Runs `body` on a new thread and waits for it.
    func onThreadOfItsOwn(_ body: @escaping @Sendable () -> Seen) -> Seen {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var seen = Seen()
        let thread = Thread { seen = body(); done.signal() }
        thread.start()
        done.wait()
        return seen
    }

    @Test func theThreadRunsFIFOAndWhatItStartsDoesNot() throws {
        let seen = onThreadOfItsOwn {
            var seen = Seen()
            do throws(SystemError) { try CPUScheduling.enterFIFO(priority: 3) } catch { seen.entered = error; return seen }
            seen.now = try? CPUScheduling.current()
            // A child started from the real-time thread (as the alert hooks are): reset on fork.
            var pid: pid_t = 0
            let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("30"), nil]
            defer { argv.forEach { free($0) } }
            guard posix_spawn(&pid, "/bin/sleep", nil, nil, argv, environ) == 0 else { return seen }
            seen.child = try? CPUScheduling.current(of: pid)
            kill(pid, SIGKILL)
            var status: CInt = 0
            _ = waitpid(pid, &status, 0)  // reaped: no zombie left for other tests
            return seen
        }
        if geteuid() == 0 {
            // Root (CI): CAP_SYS_NICE, so the request must be granted.
            #expect(seen.entered == nil)
            #expect(seen.now == CPUScheduling.fifo(priority: 3))
            #expect(seen.child == CPUScheduling.normal)
        } else if let refused = seen.entered {
            // Without CAP_SYS_NICE or RLIMIT_RTPRIO: refused, and said so as EPERM.
            #expect(refused.errno == .operationNotPermitted)
        } else {
            // Granted through RLIMIT_RTPRIO: the same checks as for root.
            #expect(seen.now == CPUScheduling.fifo(priority: 3))
            #expect(seen.child == CPUScheduling.normal)
        }
        // This thread was never touched.
        #expect(try CPUScheduling.current() == .normal)
    }

    @Test func theStatusFieldNamesThePolicyAndPriority() {
        #expect(CPUScheduling.fifo(priority: 10).description == "fifo:10")
        #expect(CPUScheduling.roundRobin(priority: 2).description == "rr:2")
        #expect(CPUScheduling.normal.description == "normal")
    }
}
