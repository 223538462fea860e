import LatchkeyAgents
import LatchkeyControl
import LatchkeyEvents
import LatchkeyPosix
import LatchkeyTransport

extension ControlPeer {
    /// `<agent>.control_refused` (a warning in the journal: AgentEvent+Journald) for each
    /// command refused to a peer: the command's first word, whether the peer was the bridge,
    /// its uid and pid.
    static func refusalEvent(_ agent: AgentRole, printer: any AgentEventSink, loop: any EventLoop) -> (ControlPeer, String) -> Void {
        { peer, command in
            let event: Event
            switch peer {
            case .owner:
                event = .controlRefused(agent, command: command)
            case .bridge(let uid, let pid):
                event = .controlRefused(agent, command: command, peer: .bridge, uid: uid, pid: pid)
            case .stranger(let uid, let pid):
                event = .controlRefused(agent, command: command, peer: .other, uid: uid,
                                        pid: pid)
            }
            printer.emit(AgentEvent(event, time: loop.now))
        }
    }
}
