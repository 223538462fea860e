import LatchkeyEvents
import LatchkeyLockProtocol

/// Whether the phone keeps its never-timing-out connect request to the lock open. It does,
/// except after a deliberate stop, and while the lock says our key is revoked: a phone whose
/// key the lock revoked stops asking (docs/SECURITY.md, "One gate"), since every re-link would
/// otherwise send a `present` the lock must refuse and audit, for as long as the phone lives.
/// A device posing as the lock can say "revoked key" too (a Write Response proves nothing), so
/// that stop is never final: a command its owner asks for by hand, or a restart of the agent,
/// asks again.
final class ConnectionRequest {
    private let configuration: PhoneAgentConfiguration
    private let events: PhoneEventOutput
    /// After `stop()`: no new connect request.
    private var stopped = false
    /// The lock answered "revoked key" (said only once our frame's tag verified under our key).
    private var keyRevoked = false

    init(configuration: PhoneAgentConfiguration, events: PhoneEventOutput) {
        self.configuration = configuration
        self.events = events
    }

    /// A connect request may be made now.
    var isWanted: Bool { !stopped && !keyRevoked }
    /// The lock said our key is revoked, and nobody has asked again since.
    var isRevoked: Bool { keyRevoked }

    /// A deliberate stop: no connect request any more.
    func stop() {
        stopped = true
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
