import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyTransport

/// Whether the phone keeps its never-timing-out connect request to the lock open. It does,
/// except after a deliberate stop, and while the lock says our key is revoked: a phone whose
/// key the lock revoked stops asking (docs/SECURITY.md, "One gate"), since every re-link would
/// otherwise send a `present` the lock must refuse and audit, for as long as the phone lives.
/// A device posing as the lock can say "revoked key" too (a Write Response proves nothing), so
/// that stop is never final: a command its owner asks for by hand, or a restart of the agent,
/// asks again. While the phone's store refuses writes it asks again only after a growing wait
/// (`next(storeRefusing:)`).
final class ConnectionRequest {
    /// What asking for the connection came to.
    enum Decision: Equatable {
        /// Make the connect request now.
        case connect
        /// The store refuses writes: no request until `retry` runs, this long after the step began.
        case backingOff(Duration)
        /// Stopped, or the key is revoked.
        case notWanted
    }

    private let configuration: PhoneAgentConfiguration
    private let events: PhoneEventOutput
    /// At the end of each step of the back-off: try a save, and ask again.
    private let retry: () -> Void
    /// After `stop()`: no new connect request.
    private var stopped = false
    /// The lock answered "revoked key" (said only once our frame's tag verified under our key).
    private var keyRevoked = false
    /// Backing off: the current step's length, and its timer while it runs.
    private var step: Duration?
    private var stepTimer: Scheduled?

    init(configuration: PhoneAgentConfiguration, events: PhoneEventOutput, retry: @escaping () -> Void) {
        self.configuration = configuration
        self.events = events
        self.retry = retry
    }

    /// A connect request may be made now.
    var isWanted: Bool { !stopped && !keyRevoked }
    /// The lock said our key is revoked, and nobody has asked again since.
    var isRevoked: Bool { keyRevoked }
    /// No request until the store takes a write again (or the step ends).
    var isBackingOff: Bool { step != nil }

    /// The agent would make its connect request (at power-on, after a drop, at a step's end).
    /// `storeRefusing`: the phone's last save failed. Such a phone cannot prove itself on a
    /// link (its `present` needs a durable counter) and the lock drops it within seconds, so
    /// it waits `storeRetryFirst`, then twice as long at each step whose save (`retry`) still
    /// fails, to `storeRetryLimit`; a request while a step runs waits for it.
    func next(storeRefusing: Bool) -> Decision {
        guard isWanted else { return .notWanted }
        guard storeRefusing else {
            endBackoff()
            return .connect
        }
        if let step, stepTimer != nil { return .backingOff(step) }
        let next = step.map { min($0 * 2, configuration.storeRetryLimit) } ?? configuration.storeRetryFirst
        step = next
        stepTimer = events.loop.schedule(after: next) { [weak self] in
            self?.stepTimer = nil
            self?.retry()
        }
        return .backingOff(next)
    }

    /// A deliberate stop: no connect request any more.
    func stop() {
        stopped = true
        endBackoff()
    }

    private func endBackoff() {
        stepTimer?.cancel()
        stepTimer = nil
        step = nil
    }

    /// The lock answered "revoked key": true when this is news, and the link should go.
    func lockSaidOurKeyIsRevoked() -> Bool {
        guard !keyRevoked else { return false }
        keyRevoked = true
        emit(.phoneKeyRevoked(lock: "\(configuration.lockAddress)"))
        return true
    }

    /// A command the owner asked for (not the automatic `present` or arrival request) is
    /// worth one more try after "revoked key": the key may have been added back. True when
    /// the request is wanted again and should be made.
    func askAgainIfTheOwnerAsks(_ operation: LockOperation) -> Bool {
        guard keyRevoked, operation != .present, operation != .arrivalUnlock else { return false }
        keyRevoked = false
        emit(.phoneAskingAgain(op: .init(operation)))
        return true
    }

    private func emit(_ event: Event) { events.emit(event) }
}
