#if canImport(Glibc)
import Glibc
#endif
import LatchkeyConfig

/// Who may reach an agent's control socket: by default only its own user (socket 0600 in a
/// 0700 state directory); with `control_socket_group: true` also the members of the agent's
/// group — the MQTT bridge's user (`latchkey-mqtt`, in group `latchkey`) — through a
/// socket of mode 0660 in a directory of mode 0710 (search only: the store files in it stay 0600).
public enum ControlSocketAccess: Sendable, Equatable {
    case owner
    case group

    static func read(_ root: ConfigTable) throws(ConfigError) -> ControlSocketAccess {
        try root.bool("control_socket_group") == true ? .group : .owner
    }

    /// Applies the modes once the socket exists; a failure is the daemon's start error.
    /// `directory`: the one holding the socket (the state directory, or the runtime one on a
    /// read-only card: `ControlSocketPath`).
    func apply(socket path: String, directory: String) throws(RuntimeError) {
        guard self == .group else { return }
        guard chmod(directory, 0o710) == 0, chmod(path, 0o660) == 0 else {
            throw RuntimeError("control socket \(path): cannot open it to the group: \(String(cString: strerror(errno)))")
        }
    }
}
