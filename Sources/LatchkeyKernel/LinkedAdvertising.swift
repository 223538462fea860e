import LatchkeyTransport

/// Advertising beside the lock's peripheral links: whether the controller can advertise while a
/// central is linked (learned from the kernel's answer the first time a link tried it), and the
/// delayed re-add of the instance after a central left. It owns the timer, the delay and what
/// was learned; the transport says what a re-add sends and whether it is still wanted (`onDue`).
final class LinkedAdvertising {
    private let timer: OneShotTimer
    private var learned: Bool?

    /// How long after a central left the instance is re-added if the controller is still
    /// powered. Our choice: it outlasts the rest of a power-off after its disconnections
    /// (hci_dev_close_sync's HCI Reset, bounded by HCI_CMD_TIMEOUT, 2 s), which ends with a
    /// New Settings that cancels the re-add; the kernel itself re-enables advertising after
    /// a disconnection, so this is only the fallback.
    var delay: Duration = .seconds(2)
    /// The delay ran out: the instance is to be added again if it is still wanted.
    var onDue: (() -> Void)?

    init(loop: any EventLoop) { timer = OneShotTimer(loop: loop) }

    /// Whether the controller advertises while a central is linked to us: nil until a link
    /// tried it, false once the kernel refused the instance then.
    var advertisesWhileLinked: Bool? { learned }

    /// Whether adding the instance beside a new link is worth a try: not once it was refused.
    var triesWhileLinked: Bool { learned != false }

    /// The kernel's answer to adding the instance beside a link. Returns true for the first
    /// refusal only: the transport reports it, once.
    func noteAnswer(took: Bool) -> Bool {
        if took {
            learned = true
            return false
        }
        guard learned != false else { return false }
        learned = false
        return true
    }

    /// Whether a re-add is scheduled.
    var isScheduled: Bool { timer.isPending }

    /// A central left: the re-add comes `delay` from now, unless one is scheduled already
    /// (then that one stands). Returns whether this call scheduled it.
    @discardableResult
    func schedule() -> Bool {
        guard !timer.isPending else { return false }
        timer.start(after: delay) { [weak self] in self?.onDue?() }
        return true
    }

    /// A change of power state (power-on re-asserts advertising; power-off must not) or close.
    func cancel() { timer.cancel() }
}
