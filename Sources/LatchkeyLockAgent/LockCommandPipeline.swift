import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeyTransport

/// What became of a command `LockAuthority` allowed, once the lock's own rules had their say.
enum DecisionOutcome: Equatable {
    /// The lock refused it (operating mode, door, a moving bolt, the journal): nothing moves.
    case refused(OperationError)
    /// Decided, but the key's counter could not be made durable (said as
    /// `lock.command_refused`): the phone hears `storageFailure`.
    case counterNotStored
    case accepted(AcceptedDecision)
}

/// A decided command: journalled before this value exists, the bolt moving or already there.
struct AcceptedDecision: Equatable {
    /// The decision the journal recorded for it; nil when none was needed (already there).
    var decision: DecisionID?
    /// How long the journal took to make `decision` durable.
    var durable: Duration?
    /// Command received → actuator line changed, when a line changed and the command's
    /// arrival is known.
    var actuatorLatency: Duration?
    /// The bolt is moving: its outcome comes later, as a lock event.
    var moving: Bool
}

/// Hands allowed commands to the `LockController` and tells the caller what it decided, as a
/// value: the decision journalled, the counter committed with it, the lock's own time from the
/// command to the actuator line. Authority is not decided here: what comes in is already an
/// `Authorization` (`LockAuthority`, the one gate).
final class LockCommandPipeline {
    private let controller: LockController
    private let outputClock: OutputChangeClock?
    /// How long a phone's command stays valid from its arrival (the challenge's lifetime).
    private let validity: Duration
    /// Makes the verified command's staged counter durable (`CommandVerifier.commitCounter`).
    private let commitStagedCounter: () throws -> Void
    private let emit: (Event) -> Void
    /// Software-path latencies (command received → actuator line changed), in ms.
    private var latencies: [Double] = []

    init(controller: LockController, outputClock: OutputChangeClock?, validity: Duration,
         commitStagedCounter: @escaping () throws -> Void, emit: @escaping (Event) -> Void) {
        self.controller = controller
        self.outputClock = outputClock
        self.validity = validity
        self.commitStagedCounter = commitStagedCounter
        self.emit = emit
    }

    /// The software-path latencies of the accepted key commands so far, in ms.
    var commandLatencies: [Double] { latencies }

    /// Submits one allowed lock or unlock. `counter`: a phone's command's new counter, committed
    /// with its decision (one fsync: `DecisionJournal.record(_:committing:)`); `received`: when
    /// its frame came (it dates its validity and its latency). A bridge's command has neither.
    func submit(_ authorization: Authorization, counter: KeyCounter? = nil, received: Instant? = nil,
                relockAfter: Duration = .seconds(1)) -> DecisionOutcome {
        let key = authorization.keyID
        let changesBefore = outputClock?.changeCount ?? 0
        let decided: DecidedCommand
        switch controller.submit(authorization, counter: counter, validUntil: received.map { $0 + validity },
                                 relockAfter: relockAfter) {
        case .refused(let error):
            return .refused(error)
        case .decided(let command):
            // A movement that failed at once (an output that could not be set) is answered as the
            // lock's refusal: the bolt did not move.
            if let failed = command.failed { return .refused(failed) }
            decided = command
        case .queued:
            // Only an event handler's command is queued (none from a phone or the bridge): it
            // runs next, and its decision is told by its events.
            decided = DecidedCommand(moving: controller.machine.isMoving)
        }
        if counter != nil {
            if authorization.operation == .lock { commitLockCounter(key: key) }  // the bolt moves whatever the store says
            else if commitCounter(key: key) != nil { return .counterNotStored }  // committed with the decision: nothing left
        }
        var accepted = AcceptedDecision(decision: decided.decision, durable: decided.durable, moving: decided.moving)
        if let received, let clock = outputClock, clock.changeCount > changesBefore, let changed = clock.lastChange {
            accepted.actuatorLatency = changed - received
            latencies.append((changed - received).milliseconds)
        }
        return .accepted(accepted)
    }

    /// Makes the verified command's counter durable unless a write of the lock's records
    /// already carried it (the decision: `DecisionJournal.record(_:committing:)`; the event of
    /// a refusal). Runs before any other durable effect of the command and before its answer;
    /// a failure answers `storageFailure`.
    func commitCounter(key: UInt32) -> CommandRejection? {
        do { try commitStagedCounter() } catch {
            emit(.lockCommandRefused(key: key, error: "counter not stored: \(error)"))
            return .storageFailure
        }
        return nil
    }

    /// An accepted lock's counter, made durable if its decision did not carry it. A store
    /// that refuses it (full, read-only) does not turn the lock into a refusal: the bolt is
    /// moving (locking is safe), so the phone is told what happened — done. The counter
    /// stays in memory, where the verifier counts it (no replay in this run; after a restart
    /// the frame's single-use, link-bound challenge is gone), and is written with the
    /// journal's backlog when the store takes writes again.
    private func commitLockCounter(key: UInt32) {
        do { try commitStagedCounter() } catch {
            emit(.lockCounterWriteFailed(key: key, error: "\(error)", held: "until the store takes writes"))
            controller.writeHeldLater()
        }
    }
}
