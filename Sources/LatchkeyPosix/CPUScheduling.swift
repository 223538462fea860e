/// The CPU scheduling of the calling thread: the lock agent's event loop runs under
/// SCHED_FIFO so that a command's path (frame in, decision on disk, actuator line) is never
/// preempted by ordinary work (CHANGELOG.md, "Under load, and the table in one command").
///
/// SCHED_FIFO is asked with SCHED_RESET_ON_FORK, which applies to every clone: the hooks the
/// agent starts (alert hooks, `sh -c ...`) and any thread it starts later begin under the
/// normal policy, not at the lock's priority. `forbidFurtherRealtime()` then drops
/// RLIMIT_RTPRIO to 0, so that only the loop's thread is ever real-time.
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

    /// Moves the calling thread to SCHED_FIFO at `priority`.
    /// Refused with EPERM without CAP_SYS_NICE or an RLIMIT_RTPRIO of at least `priority`
    /// (systemd's LimitRTPRIO=), and by a seccomp filter (systemd's RestrictRealtime=yes).
    public static func enterFIFO(priority: Int) throws(SystemError) {
        precondition(fifoPriorities.contains(priority), "SCHED_FIFO priority \(priority) outside \(fifoPriorities)")
        try Syscalls.enterFIFO(priority: CInt(priority))
    }

    /// RLIMIT_RTPRIO to 0, soft and hard, for the whole process: after the loop's thread got
    /// SCHED_FIFO, no other thread and no child can ask for a real-time policy (a compromised
    /// agent could otherwise run one busy loop per core at the unit's LimitRTPRIO). Without
    /// CAP_SYS_RESOURCE the limit cannot be raised again; with CAP_SYS_NICE it does not bind.
    public static func forbidFurtherRealtime() throws(SystemError) {
        try Syscalls.forbidRealtime()
    }
}
