import LatchkeyAgents
import LatchkeyEvents
import LatchkeyTransport

/// Where the phone agent's components say what happened: the agent's event sink, each event
/// stamped with the loop's clock, as the agent itself emits them.
struct PhoneEventOutput {
    let sink: any AgentEventSink
    let loop: any EventLoop

    func emit(_ event: Event) {
        sink.emit(AgentEvent(event, time: loop.now))
    }
}
