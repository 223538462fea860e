import LatchkeyTransport

/// Journal writes the journal refused (a full or read-only SD card, an I/O error), kept in
/// order until it takes writes again: a lock decision whose bolt moved anyway (locking is
/// safe), outcomes of decisions, and what the journal's store holds in memory (a lock
/// command's counter). Never an unlock's record: an unlock the journal did not take never moves.
struct JournalBacklog {
    enum Write: Equatable {
        case record(LockDecision)
        case complete(DecisionID, DecisionOutcome)
        /// `DecisionJournal.writeHeld`.
        case held
    }

    var writes: [Write] = []
    /// Refusals in a row, for the backoff.
    var attempts = 0
    var timer: Scheduled?

    /// Our choice: 1 s, doubling to a minute: a remount or a freed disk is noticed within a
    /// minute, and a dead card costs one failing write a minute.
    static let first: Duration = .seconds(1)
    static let cap: Duration = .seconds(60)

    func delay() -> Duration {
        var delay = Self.first
        for _ in 0..<min(attempts, 6) { delay = delay * 2 }
        return min(delay, Self.cap)
    }
}

extension LockController {
    /// Journal writes waiting for the journal (0: everything the lock did is on disk).
    public var unwrittenJournalEntries: Int { backlog.writes.count }

    /// The journal's store holds writes in memory that it refused (a lock command's counter,
    /// answered as done: the bolt moved): they are written with the backlog, and until then
    /// the journal counts as at fault.
    public func writeHeldLater() {
        guard !backlog.writes.contains(.held) else { return }
        keepForLater(.held)
    }

    /// Keeps `write` for later and makes sure a later attempt is scheduled.
    func keepForLater(_ write: JournalBacklog.Write) {
        backlog.writes.append(write)
        scheduleBacklogWrite()
    }

    /// Writes what waits, oldest first; throws the journal's error at the first refusal
    /// (what is left stays, in order).
    func writeBacklog() throws {
        while let write = backlog.writes.first {
            switch write {
            case .record(let decision):
                try journal.record(decision)
                lastRecordedDecision = decision.id
            case .complete(let id, let outcome):
                try journal.complete(id, outcome: outcome)
            case .held:
                try journal.writeHeld()
            }
            backlog.writes.removeFirst()
        }
        backlog.attempts = 0
        backlog.timer?.cancel()
        backlog.timer = nil
    }

    /// Writes what waits now rather than at its next retry (the store just became writable
    /// again); a refusal goes back to the retry schedule.
    public func writeBacklogNow() {
        guard !backlog.writes.isEmpty else { return }
        backlog.timer?.cancel()
        backlog.timer = nil
        attemptBacklog()
    }

    private func scheduleBacklogWrite() {
        guard backlog.timer == nil else { return }
        backlog.timer = loop.schedule(after: backlog.delay()) { [weak self] in
            guard let self else { return }
            self.backlog.timer = nil
            self.attemptBacklog()
        }
    }

    private func attemptBacklog() {
        do {
            try writeBacklog()
            journalFault = nil
            onJournalCaughtUp?()
        } catch {
            backlog.attempts += 1
            journalFault = error
            onFault?(.journal(error))
            scheduleBacklogWrite()
        }
    }
}
