import LatchkeyAgents
import LatchkeyPosix

/// Who is on the other end of a control-socket connection, decided once when it connects
/// from the kernel's record of the connecting process (SO_PEERCRED), never from anything
/// the peer sends (docs/SECURITY.md, "Control sockets").
public enum ControlPeer: Equatable, Sendable {
    /// The agent's own user, or root: every command.
    case owner
    /// The one user the agent's configuration names for the MQTT bridge (`bridge_user`): only
    /// what the bridge needs (`ControlDispatcher.peerCommands`).
    case bridge(uid: UInt32, pid: Int32)
    /// Anyone else the socket's mode let in (another member of the agent's group), or a peer
    /// whose credentials could not be read (fail closed): no command at all.
    case stranger(uid: UInt32?, pid: Int32?)

    /// "uid 1001 (pid 42)", for the refusal line and event.
    package var who: String {
        switch self {
        case .owner: "the agent's user"
        case .bridge(let uid, let pid): "uid \(uid) (pid \(pid))"
        case .stranger(let uid, let pid):
            (uid.map { "uid \($0)" } ?? "a peer with unreadable credentials") + (pid.map { " (pid \($0))" } ?? "")
        }
    }
}

/// How a control socket learns who connected: `kernel` asks SO_PEERCRED and compares with
/// this process's user and `bridge_user`; tests inject other credentials (the attacker's uid)
/// through the same seam.
public struct ControlPeerIdentification {
    public var agentUserID: UInt32
    /// `bridge_user`'s uid (nil: no bridge): the daemon sets it from its configuration.
    public var bridgeUserID: UInt32?
    public var credentials: (SeqPacketSocket) -> Result<PeerCredentials, SystemError>

    public init(agentUserID: UInt32, credentials: @escaping (SeqPacketSocket) -> Result<PeerCredentials, SystemError>) {
        self.agentUserID = agentUserID
        self.credentials = credentials
    }

    public static var kernel: ControlPeerIdentification {
        ControlPeerIdentification(agentUserID: PeerCredentials.currentUserID) { socket in
            do throws(SystemError) { return .success(try socket.peerCredentials()) } catch { return .failure(error) }
        }
    }

    package func peer(of socket: SeqPacketSocket) -> ControlPeer {
        switch credentials(socket) {
        case .success(let c) where c.uid == agentUserID || c.uid == 0: .owner
        case .success(let c) where c.uid == bridgeUserID: .bridge(uid: c.uid, pid: c.pid)
        // Being in the socket's group is only the way in, not a role.
        case .success(let c): .stranger(uid: c.uid, pid: c.pid)
        // Unknown is not trusted: it cannot be shown to be the bridge.
        case .failure: .stranger(uid: nil, pid: nil)
        }
    }
}
