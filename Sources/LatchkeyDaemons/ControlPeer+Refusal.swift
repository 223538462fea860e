import LatchkeyAgents
import LatchkeyControl
import LatchkeyTransport

extension ControlPeer {
    /// `<agent>.control_refused` (a warning in the journal: AgentEvent+Journald) for each
    /// command refused to a peer: the command's first word, whether the peer was the bridge,
    /// its uid and pid.
    static func refusalEvent(_ agent: String, printer: any AgentEventSink, loop: any EventLoop) -> (ControlPeer, String) -> Void {
        { peer, command in
            var fields: [(String, String)] = [("command", command)]
            switch peer {
            case .owner: break
            case .bridge(let uid, let pid):
                fields += [("peer", "bridge"), ("uid", "\(uid)"), ("pid", "\(pid)")]
            case .stranger(let uid, let pid):
                fields += [("peer", "other"), ("uid", uid.map { "\($0)" } ?? "unknown"), ("pid", pid.map { "\($0)" } ?? "unknown")]
            }
            printer.emit(AgentEvent(agent + ".control_refused", time: loop.now, fields))
        }
    }
}
