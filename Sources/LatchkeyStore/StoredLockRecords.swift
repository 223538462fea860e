import LatchkeyLock
import LatchkeyTransport

/// The lock's decision journal and audit log over one store, so the two never disagree after a
/// crash: a decision's completion and the event that reports it are one transaction (`complete`
/// only notes it; the event's `append` commits both). The intent is never deferred: `record`
/// commits before the actuator moves. A verified command's staged counter rides on the next
/// write here, so a command pays one fsync before the actuator moves and its counter is never
/// durable later than its decision; a counter the store refuses is held and rides on the next
/// write that goes through (`writeHeld`). docs/RESTORATION.md, "Lock decisions that survive death".
public final class StoredLockRecords: DecisionJournal, LockEventLog {
    public let journal: StoredDecisionJournal
    public let log: StoredEventLog
    let store: AgentStore
    private let loop: any EventLoop
    private var noted: (id: DecisionID, outcome: DecisionOutcome)?
    /// Where staged counters are written (`StoredLockRecords+Counters.swift`).
    let keys: StoredKeyStore
    var stagedCounter: (keyID: UInt32, counter: UInt64)?
    /// Counters of commands carried out whose write the store refused (`commitStagedCounter`).
    var heldCounters: [UInt32: UInt64] = [:]
    private var last: UInt32
    /// A noted completion that could not be committed on the next turn.
    public var onDeferredFailure: ((any Error) -> Void)?

    /// Throws when the log's last sequence cannot be read: numbering from 0 again would give
    /// new events the numbers of old ones.
    init(store: AgentStore, journal: StoredDecisionJournal, log: StoredEventLog, loop: any EventLoop) throws(StoreError) {
        self.store = store
        self.journal = journal
        self.log = log
        self.loop = loop
        keys = store.keyStore()
        last = UInt32(truncatingIfNeeded: try log.lastSequence() ?? 0)
    }

    // MARK: DecisionJournal

    public func record(_ decision: LockDecision) throws {
        try commitNoted()
        let journal = journal
        try store.writingDecision(decision.id) {
            try writeCarryingCounter { db in try journal.record(decision, in: db) }
        }
    }

    /// The counter-with-decision rule: the key's new counter and the decision its command led
    /// to, in one transaction — one commit, one fsync, before the actuator moves. A failed
    /// write takes both with it, and the counter stays staged for the agent to commit alone.
    public func record(_ decision: LockDecision, committing counter: KeyCounter) throws {
        try commitNoted()
        let journal = journal
        try store.writingDecision(decision.id) {
            try writeCarryingCounter(counter) { db in try journal.record(decision, in: db) }
        }
    }

    public func complete(_ id: DecisionID, outcome: DecisionOutcome) throws {
        try commitNoted()
        noted = (id, outcome)
        loop.execute { [weak self] in
            guard let self else { return }
            do { try self.commitNoted() } catch { self.onDeferredFailure?(error) }
        }
    }

    // MARK: LockEventLog

    @discardableResult
    public func append(_ event: LockEvent) throws -> UInt32 {
        let sequence: UInt64
        if let completion = noted, event.decision == completion.id {
            noted = nil
            let journal = journal, log = log
            sequence = try writeCarryingCounter { db in
                try journal.complete(completion.id, outcome: completion.outcome, in: db)
                return try log.append(event, in: db)
            }
        } else {
            try commitNoted()
            let log = log
            sequence = try writeCarryingCounter { db in try log.append(event, in: db) }
        }
        last = UInt32(truncatingIfNeeded: sequence)
        return last
    }

    public func events(from sequence: UInt32, limit: Int) throws -> [(sequence: UInt32, bytes: [UInt8])] {
        try log.read(from: UInt64(sequence), limit: limit).map { (UInt32(truncatingIfNeeded: $0.sequence), $0.event.encoded) }
    }

    public var lastSequence: UInt32 { last }

    private func commitNoted() throws {
        guard let completion = noted else { return }
        noted = nil
        try journal.complete(completion.id, outcome: completion.outcome)
    }
}

extension LockEvent {
    /// The decision a LockOperation or LockOperationError reports, if any.
    public var decision: DecisionID? {
        switch kind {
        case .lockOperation(let record), .lockOperationError(let record, _): record.decision
        case .doorLockAlarm, .doorStateChange, .lockUserChange, .operatingModeChange, .suspectedRelay: nil
        }
    }
}

extension AgentStore {
    /// The lock's journal and log, paired (see `StoredLockRecords`). `monotonicNow` is the
    /// lock's loop clock; the loop runs the deferred commits.
    public func lockRecords(loop: any EventLoop,
                            journalRetention: Int = StoredDecisionJournal.defaultRetention,
                            logRetention: Int = StoredEventLog.defaultRetention) throws(StoreError) -> StoredLockRecords {
        try StoredLockRecords(store: self, journal: decisionJournal(monotonicNow: { loop.now }, retention: journalRetention),
                          log: eventLog(retention: logRetention), loop: loop)
    }
}
