import LatchkeyEvents
import LatchkeyManagers
import LatchkeyTransport

/// A refused request is never silent: each is a `*.transport_refused` event (the daemons log
/// it as a warning) and counts in `status` (`transport_refusals=`). The request itself still
/// stands; the transport asks again.
extension AgentEvent {
    package static func transportRefused(_ role: AgentRole, _ refusal: TransportRefusal, time: Instant) -> AgentEvent {
        AgentEvent(.transportRefused(role, request: "\(refusal.request)", reason: refusal.reason,
                                     attempt: refusal.attempt, retryIn: refusal.retryIn), time: time)
    }
}
