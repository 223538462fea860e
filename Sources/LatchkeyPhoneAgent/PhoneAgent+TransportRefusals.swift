import LatchkeyAgents
import LatchkeyCentral
import LatchkeyTransport

/// The phone's refused transport requests (`AgentEvent.transportRefused`).
extension PhoneAgent {
    public func centralManager(_ central: CentralManager, didRefuse refusal: TransportRefusal) {
        transportRefusals += 1
        events.emit(.transportRefused(.phone, refusal, time: loop.now))
    }
}
