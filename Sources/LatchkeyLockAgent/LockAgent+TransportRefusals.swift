import LatchkeyAgents
import LatchkeyPeripheral
import LatchkeyTransport

/// The lock's refused transport requests (`AgentEvent.transportRefused`).
extension LockAgent {
    public func peripheralManager(_ pm: PeripheralManager, didRefuse refusal: TransportRefusal) {
        transportRefusals += 1
        events.emit(.transportRefused(.lock, refusal, time: loop.now))
    }
}
