import LatchkeyAgents
import LatchkeyEvents
import LatchkeyPosix
import Logging

/// `lock.realtime_priority`: `latchkey lock` asks for SCHED_FIFO before its loop runs, so a
/// command's path is not preempted by ordinary work; under two busy loops and a syncing writer
/// a preempted command waited a scheduler tick or more (CHANGELOG.md, "Under load, and the table in
/// one command"). What it got is an event and the `status` field `scheduling=`.
enum RealtimePriority {
    /// `lock.realtime policy=fifo priority=N`, or `lock.realtime_refused` (a warning: the lock
    /// works on under the normal policy) naming the error and what would allow it.
    static func enter(_ priority: Int?, printer: EventPrinter, loop: PosixEventLoop, logger: Logger) {
        guard let priority else { return }  // configured off (0)
        do {
            try CPUScheduling.enterFIFO(priority: priority)
        } catch {
            let hint = error.errno == .operationNotPermitted
                ? "needs CAP_SYS_NICE or LimitRTPRIO=\(priority) (the shipped unit sets it), no seccomp filter "
                  + "refusing it (RestrictRealtime=yes), and on a kernel with CONFIG_RT_GROUP_SCHED a real-time "
                  + "budget for the service's cgroup" : "\(error)"
            printer.emit(AgentEvent(.lockRealtimeRefused(priority: priority, error: "\(error)", hint: hint),
                                    time: loop.now))
            logger.warning("SCHED_FIFO refused; the lock runs under the normal policy",
                           metadata: ["priority": "\(priority)", "error": "\(error)", "hint": "\(hint)"])
            return
        }
        // Only this thread real-time: no thread or child of the agent may follow it.
        var limit = "0"
        do { try CPUScheduling.forbidFurtherRealtime() } catch {
            limit = "unchanged"
            printer.emit(AgentEvent(.lockRealtimeLimitFailed(error: "\(error)"), time: loop.now))
            logger.error("could not drop RLIMIT_RTPRIO after SCHED_FIFO", metadata: ["error": "\(error)"])
        }
        printer.emit(AgentEvent(.lockRealtime(policy: "fifo", priority: priority, rtprioLimit: limit),
                                time: loop.now))
    }

    /// The `status` field's value: what the calling thread (the loop's) runs under.
    static var statusField: String {
        do { return try CPUScheduling.current().description } catch { return "unknown(\(error))" }
    }
}
