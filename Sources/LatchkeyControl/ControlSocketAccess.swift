#if canImport(Glibc)
import Glibc
#endif
import LatchkeyConfig

/// Who may reach an agent's control socket. By default only its own user and root (socket
/// 0600 in a 0700 state directory). With `bridge_user:` one more user, the MQTT bridge's: the
/// socket becomes 0660 in a 0710 directory so that user, a member of the agent's group
/// (`latchkey-mqtt` in `latchkey`), can connect at all, and the peer's uid (SO_PEERCRED,
/// `ControlPeerIdentification`) decides what it may do — any other member of the group is
/// refused every command.
public enum ControlSocketAccess: Sendable, Equatable {
    case owner
    case bridge(BridgeUser)

    /// The uid that gets the bridge's commands; nil: no bridge.
    package var bridgeUserID: UInt32? {
        if case .bridge(let user) = self { user.uid } else { nil }
    }

    package static func read(_ root: ConfigTable) throws(ConfigError) -> ControlSocketAccess {
        // The old field opened the socket to the whole group and made every member the bridge:
        // an old file must not start with a meaning it no longer has.
        if let group = try root.bool("control_socket_group") {
            throw root.invalid("control_socket_group", group
                ? "is replaced by bridge_user: write `bridge_user: latchkey-mqtt` (the user the MQTT bridge runs as) "
                    + "instead; only that user, no longer every member of the agent's group, gets the bridge's commands"
                : "is replaced by bridge_user: remove this line (without bridge_user only the agent's user and root "
                    + "reach the control socket)")
        }
        guard let given = try root.string("bridge_user") else { return .owner }
        let user: (uid: UInt32, name: String, group: UInt32)
        switch BridgeUser.lookUp(given) {
        case .found(let u): user = u
        case .missing:
            throw root.invalid("bridge_user", "no user '\(given)' on this system (`getent passwd \(given)`): name the "
                               + "user the MQTT bridge runs as (latchkey-mqtt, made by latchkey.sysusers.conf)")
        case .failed(let why):
            throw root.invalid("bridge_user", "cannot look up '\(given)' in the user database: \(why)")
        }
        guard user.uid != 0 else {
            throw root.invalid("bridge_user", "'\(given)' is root, who has every command already: name the user "
                               + "the MQTT bridge runs as (latchkey-mqtt)")
        }
        return .bridge(BridgeUser(uid: user.uid, name: user.name, group: user.group,
                                  site: root.invalid("bridge_user", "'\(given)'")))
    }

    /// Applies the modes once the socket exists; a failure is the daemon's start error.
    /// `directory`: the one holding the socket (the state directory, or the runtime one on a
    /// read-only card: `ControlSocketPath`).
    package func apply(socket path: String, directory: String) throws(RuntimeError) {
        guard case .bridge(let user) = self else { return }
        guard chmod(directory, 0o710) == 0, chmod(path, 0o660) == 0 else {
            throw RuntimeError("control socket \(path): cannot open it to bridge_user \(user.name) through the "
                               + "group: \(String(cString: strerror(errno)))")
        }
    }

    /// Why the bridge's user cannot connect to the socket at `path` (not in the socket's
    /// group), for a warning at start; nil when it can.
    package func unreachable(socket path: String) -> String? {
        guard case .bridge(let user) = self else { return nil }
        var st = stat()
        guard stat(path, &st) == 0, !user.isMember(of: st.st_gid) else { return nil }
        return "bridge_user \(user.name) (uid \(user.uid)) is not in the control socket's group (gid \(st.st_gid)): "
            + "the MQTT bridge cannot connect; add it (latchkey.sysusers.conf: m \(user.name) latchkey)"
    }
}

/// The MQTT bridge's user, named in the agent's configuration (`bridge_user:`): a user name or
/// a numeric uid, either of which must be in the system's user database when the agent starts.
public struct BridgeUser: Sendable, Equatable {
    public var uid: UInt32
    /// Its name in the user database (`latchkey-mqtt`).
    public var name: String
    /// Its primary group, for the membership check.
    public var group: UInt32
    /// Where `bridge_user` was given (file, line, field), for an error found at start.
    public var site: ConfigError

    package enum Lookup {
        case found((uid: UInt32, name: String, group: UInt32))
        case missing
        case failed(String)
    }

    /// `text` as a user name, or as a uid when it is all digits.
    package static func lookUp(_ text: String) -> Lookup {
        guard !text.isEmpty else { return .missing }
        var size = 4096
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            // The entry's strings live in the buffer: read them while it is pinned.
            let answer: Lookup? = buffer.withUnsafeMutableBufferPointer { buffer in
                var entry = passwd()
                var found: UnsafeMutablePointer<passwd>?
                let status = UInt32(text).map { getpwuid_r($0, &entry, buffer.baseAddress!, buffer.count, &found) }
                    ?? getpwnam_r(text, &entry, buffer.baseAddress!, buffer.count, &found)
                // An entry longer than the buffer: a bigger one, bounded.
                if status == ERANGE && buffer.count < 1 << 20 { return nil }
                guard status == 0 else { return .failed(String(cString: strerror(status))) }
                guard let found else { return .missing }
                return .found((found.pointee.pw_uid, String(cString: found.pointee.pw_name), found.pointee.pw_gid))
            }
            if let answer { return answer }
            size *= 4
        }
    }

    /// Whether this user is in group `gid` (its primary group or a supplementary one).
    package func isMember(of gid: UInt32) -> Bool {
        guard gid != group else { return true }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, group, &groups, &count) == -1 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(name, group, &groups, &count) != -1 else { return false }
        }
        return groups.prefix(Int(count)).contains(gid)
    }
}
