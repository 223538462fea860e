import LatchkeyTransport

/// A lock or unlock the lock has decided to carry out: the intent written to the journal
/// BEFORE the actuator moves (docs/LOCK-RULES.md, "Decisions that survive death"), so
/// that after a crash the lock knows what was in flight.
public struct LockDecision: Hashable, Sendable {
    public var id: DecisionID
    public var operation: LockOperationType
    public var source: OperationSource
    public var who: KeyID?
    /// When it was decided, on the loop's monotonic clock.
    public var decidedAt: Instant
    /// End of the validity window: an UNLOCK interrupted by a crash is resumed only before
    /// this instant. Lock decisions are always resumed.
    ///
    /// Instants are on a per-boot monotonic clock. A journal that outlives a reboot must
    /// hand back a decision from an earlier boot with its deadline in the past (the
    /// journal knows the boot id; this module does not).
    public var deadline: Instant
    /// For UnlockWithTimeout: relock after this instead of AutoRelockTime.
    public var relockAfter: Duration?

    public init(id: DecisionID, operation: LockOperationType, source: OperationSource, who: KeyID? = nil,
                decidedAt: Instant, deadline: Instant, relockAfter: Duration? = nil) {
        self.id = id
        self.operation = operation
        self.source = source
        self.who = who
        self.decidedAt = decidedAt
        self.deadline = deadline
        self.relockAfter = relockAfter
    }

    /// Whether an interrupted decision may still be carried out at `now`.
    public func isValid(at now: Instant) -> Bool {
        decidedAt <= now && now < deadline
    }
}

/// How a decision ended.
public enum DecisionOutcome: UInt8, Hashable, Sendable, CaseIterable {
    case succeeded = 0
    /// The bolt did not reach the target in time (NotFullyLocked).
    case jammed = 1
    /// Not carried out: an unlock found past its validity after a crash, or a resumed lock
    /// deferred because the door is open.
    case abandoned = 2
    /// The actuator output failed.
    case hardwareFault = 3
}

/// Where decisions are made durable. `record` returns only once the decision would survive
/// a crash (the file implementation fsyncs); if it throws, the lock does not move.
///
/// Called on the event loop; a slow journal delays the lock, which is the point.
public protocol DecisionJournal: AnyObject {
    func record(_ decision: LockDecision) throws
    /// A key's command decided: `decision` and the key's new `counter` made durable together,
    /// in one transaction (one fsync), before the actuator moves — both or neither. A journal
    /// that shares no transaction with the key store records the decision alone: its key
    /// store made the counter durable when the verifier accepted it (`KeyStore.stageCounter`).
    func record(_ decision: LockDecision, committing counter: KeyCounter) throws
    func complete(_ id: DecisionID, outcome: DecisionOutcome) throws
    /// Writes what the journal's store holds in memory because it refused it (a lock
    /// command's counter: `StoredLockRecords`); the backlog runs it once the store takes
    /// writes again. By default there is nothing held.
    func writeHeld() throws
}

extension DecisionJournal {
    public func writeHeld() throws {}
    public func record(_ decision: LockDecision, committing counter: KeyCounter) throws { try record(decision) }
}

/// A key's command counter as the verifier accepted it: what the decision the command leads
/// to commits with it (`DecisionJournal.record(_:committing:)`).
public struct KeyCounter: Hashable, Sendable {
    public var keyID: UInt32
    public var counter: UInt64
    public init(keyID: UInt32, counter: UInt64) { self.keyID = keyID; self.counter = counter }
}

/// A journal in memory, for tests and the simulation: keeps every entry in order, can be
/// told to fail, and answers what a restarted lock would be handed.
public final class InMemoryDecisionJournal: DecisionJournal {
    public enum Entry: Hashable, Sendable {
        case recorded(LockDecision)
        case completed(DecisionID, DecisionOutcome)
    }

    public struct Failure: Error, Hashable, Sendable {
        public var message: String
        public init(_ message: String) { self.message = message }
    }

    public private(set) var entries: [Entry] = []
    /// When set, `record` throws it (a full disk, a failed fsync).
    public var recordFailure: Failure?
    /// When set, `complete` throws it.
    public var completeFailure: Failure?

    public init() {}

    public func record(_ decision: LockDecision) throws {
        if let recordFailure { throw recordFailure }
        entries.append(.recorded(decision))
    }

    public func complete(_ id: DecisionID, outcome: DecisionOutcome) throws {
        if let completeFailure { throw completeFailure }
        entries.append(.completed(id, outcome))
    }

    /// The latest decision recorded and never completed: what a restart passes to
    /// `LockController.start(recovered:)`.
    public var interrupted: LockDecision? {
        var completed = Set<DecisionID>()
        for entry in entries.reversed() {
            switch entry {
            case .completed(let id, _): completed.insert(id)
            case .recorded(let decision) where !completed.contains(decision.id): return decision
            case .recorded: continue
            }
        }
        return nil
    }

    /// The highest id ever recorded, so a restarted lock continues after it.
    public var lastDecisionID: DecisionID? {
        entries.compactMap { entry -> DecisionID? in
            if case .recorded(let decision) = entry { return decision.id }
            return nil
        }.max()
    }

    /// How `id` ended, if it did.
    public func outcome(of id: DecisionID) -> DecisionOutcome? {
        for case .completed(let completed, let outcome) in entries where completed == id { return outcome }
        return nil
    }
}
