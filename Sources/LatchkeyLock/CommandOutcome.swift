/// What the lock's rules made of one command (`LockStateMachine.handle(_:at:)`), before the
/// journal's answer.
public enum CommandVerdict: Hashable, Sendable {
    /// Refused (operating mode, door, a moving bolt, not started): nothing is decided.
    case refused(OperationError)
    /// The bolt is already where the command wants it: nothing moves, nothing is journalled.
    case alreadyThere
    /// Decided: the decision goes to the journal, and the actuator waits for its answer.
    case journaling(LockDecision)
}

/// What became of a command submitted to the `LockController`, as a value: the lock's rules,
/// then the journal's answer to the decision, then what the bolt did before `submit` returned.
public enum CommandOutcome: Hashable, Sendable {
    /// Nothing moved and nothing was journalled: the lock's rules refused it, or the journal
    /// refused its unlock's decision (`journalFailed`).
    case refused(OperationError)
    case decided(DecidedCommand)
    /// Submitted while the controller ran another input (an event handler's command): it runs
    /// right after that input, and what became of it is told by its events only.
    case queued
}

/// A command the lock decided.
public struct DecidedCommand: Hashable, Sendable {
    /// The decision the journal holds for it; nil when none was needed (the bolt was already
    /// there), or for a lock the journal refused (it moves all the same and is written later).
    public var decision: DecisionID?
    /// How long the journal took to make `decision` durable, on the loop's clock.
    public var durable: Duration?
    /// The bolt is still moving when `submit` returns: its outcome comes later, as events.
    public var moving: Bool
    /// The movement failed before `submit` returned (an actuator output that could not be set),
    /// a lock the journal refused included: the decision is completed as failed in the journal
    /// (for that lock, once the journal takes writes).
    public var failed: OperationError?

    public init(decision: DecisionID? = nil, durable: Duration? = nil, moving: Bool, failed: OperationError? = nil) {
        self.decision = decision
        self.durable = durable
        self.moving = moving
        self.failed = failed
    }
}

extension DecisionOutcome {
    /// The error a failed movement's completion stands for; nil for one that did not fail.
    var failure: OperationError? {
        switch self {
        case .jammed: .jammed
        case .hardwareFault: .hardwareFault
        case .succeeded, .abandoned: nil
        }
    }
}
