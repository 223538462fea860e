import LatchkeyLockProtocol
import LatchkeyTransport

/// The phone's commands in order: those waiting for the GATT setup or for the one before
/// them, and the one in flight under its timeout. A command's outcome goes to its own
/// completion and to no other: one refused never takes the commands behind it along (they
/// go next); only a lost link fails them all. The coordinator sends what `start` hands it.
final class CommandQueue {
    typealias Completion = (Result<Void, PhoneAgent.CommandError>) -> Void

    /// The command in flight, as the coordinator sees it.
    struct InFlight {
        var operation: LockOperation
        /// The argument of `setOperatingMode`.
        var mode: UInt8?
        var sentAt: Instant
        var awaitingChallenge = true
        /// Sealed with a challenge read ahead: a lock that no longer holds it (it restarted)
        /// refuses it as stale, and the command is sent once more with a fresh read.
        var usedHeldChallenge = false
        /// This command was sent again after that refusal (only once).
        var retried = false
        /// It came while the challenge read ahead was on its way, and waits for it.
        var awaitingReadAhead = false
    }

    /// A command waiting its turn.
    private struct Queued {
        var operation: LockOperation
        var mode: UInt8?
        var completion: Completion
        var retried = false
    }

    private let loop: any EventLoop
    private let timeout: Duration
    private let timedOut: () -> Void
    private var queue: [Queued] = []
    private var inFlight: (command: InFlight, completion: Completion)?
    private var commandTimer: Scheduled?

    /// `timedOut` runs when the command in flight has had no answer for `timeout`.
    init(loop: any EventLoop, timeout: Duration, timedOut: @escaping () -> Void) {
        self.loop = loop
        self.timeout = timeout
        self.timedOut = timedOut
    }

    /// No command queued or in flight.
    var isIdle: Bool { queue.isEmpty && inFlight == nil }
    /// The command in flight.
    var current: InFlight? { inFlight?.command }

    func append(_ operation: LockOperation, mode: UInt8?, completion: @escaping Completion) {
        queue.append(Queued(operation: operation, mode: mode, completion: completion))
    }

    /// The next command goes in flight, under its timeout; nil when one is in flight already
    /// or none waits.
    func start() -> InFlight? {
        guard inFlight == nil, !queue.isEmpty else { return nil }
        let next = queue.removeFirst()
        let command = InFlight(operation: next.operation, mode: next.mode, sentAt: loop.now, retried: next.retried)
        inFlight = (command, next.completion)
        commandTimer = loop.schedule(after: timeout) { [weak self] in
            self?.commandTimer = nil
            self?.timedOut()
        }
        return command
    }

    /// The command in flight waits for the challenge read ahead under way.
    func waitForReadAhead() {
        inFlight?.command.awaitingReadAhead = true
    }

    /// The read ahead answered: true when the command in flight was waiting for it.
    func readAheadArrived() -> Bool {
        guard inFlight?.command.awaitingReadAhead == true else { return false }
        inFlight?.command.awaitingReadAhead = false
        return true
    }

    /// The command in flight is sealed with a challenge read ahead.
    func sealedWithHeldChallenge() {
        inFlight?.command.usedHeldChallenge = true
    }

    /// The command in flight has its challenge and is sealed now; nil when none is in flight.
    func challengeArrived() -> InFlight? {
        inFlight?.command.awaitingChallenge = false
        return current
    }

    /// The command in flight ends with `result`, told to its caller; false when none was in flight.
    @discardableResult
    func finish(_ result: Result<Void, PhoneAgent.CommandError>) -> Bool {
        guard let f = inFlight else { return false }
        inFlight = nil
        commandTimer?.cancel()
        commandTimer = nil
        f.completion(result)
        return true
    }

    /// The command in flight goes back to the head of the queue, to be sent again from its
    /// challenge read (`retried`: after the lock refused its held challenge, which happens once).
    func sendAgain(retried: Bool) {
        guard let f = inFlight else { return }
        inFlight = nil
        commandTimer?.cancel()
        commandTimer = nil
        queue.insert(Queued(operation: f.command.operation, mode: f.command.mode, completion: f.completion,
                            retried: retried || f.command.retried), at: 0)
    }

    /// The link is gone: every command fails with `why`, the one in flight first.
    func failAll(_ why: String) {
        let pending = queue
        queue.removeAll()
        commandTimer?.cancel()
        commandTimer = nil
        if let f = inFlight { inFlight = nil; f.completion(.failure(.notDelivered(why))) }
        for q in pending { q.completion(.failure(.notDelivered(why))) }
    }
}
