/// The CPU scheduling of the calling thread: the lock agent's event loop runs under
/// SCHED_FIFO so that a command's path (frame in, decision on disk, actuator line) is never
/// preempted by ordinary work (README, "Under load, and the table in one command").
///
/// SCHED_FIFO is asked with SCHED_RESET_ON_FORK: the hooks the agent starts (alert hooks,
/// `sh -c ...`) begin under the normal policy, not at the lock's priority.
public enum CPUScheduling: Equatable, Sendable, CustomStringConvertible {
    /// SCHED_OTHER (or SCHED_BATCH/SCHED_IDLE: anything not real-time).
    case normal
    case fifo(priority: Int)
    case roundRobin(priority: Int)

    /// The priorities SCHED_FIFO takes on Linux (sched(7)). The kernel's threaded interrupt
    /// handlers run at 50: the lock stays below them, so the disk's and the radio's
    /// interrupts still preempt it.
    public static let fifoPriorities = 1...49

    /// `fifo:10`, `rr:5` or `normal`: the `status` field.
    public var description: String {
        switch self {
        case .normal: "normal"
        case .fifo(let p): "fifo:\(p)"
        case .roundRobin(let p): "rr:\(p)"
        }
    }

    /// What the calling thread (`pid` 0) or thread/process `pid` runs under now.
    public static func current(of pid: Int32 = 0) throws(SystemError) -> CPUScheduling {
        let (policy, priority) = try Syscalls.scheduling(of: pid)
        switch policy {
        case 1: return .fifo(priority: Int(priority))   // SCHED_FIFO
        case 2: return .roundRobin(priority: Int(priority))  // SCHED_RR
        default: return .normal
        }
    }

    /// Moves the calling thread (and the threads it starts later) to SCHED_FIFO at `priority`.
    /// Refused with EPERM without CAP_SYS_NICE or an RLIMIT_RTPRIO of at least `priority`
    /// (systemd's LimitRTPRIO=), and by a seccomp filter (systemd's RestrictRealtime=yes).
    public static func enterFIFO(priority: Int) throws(SystemError) {
        precondition(fifoPriorities.contains(priority), "SCHED_FIFO priority \(priority) outside \(fifoPriorities)")
        try Syscalls.enterFIFO(priority: CInt(priority))
    }
}
