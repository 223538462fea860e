#if canImport(Glibc)
import Glibc
#endif
import LatchkeyConfig
import LatchkeyPosix
@testable import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeyDemo
@testable import LatchkeySettings
import Testing

/// `bridge_user:` names the one user besides the agent's and root that reaches the control
/// socket (the MQTT bridge's), and opens the socket just enough for it: the store stays the
/// owner's. A user that does not exist, root, the agent's own user, or the old
/// `control_socket_group` stop the start (exit 78 at the field's file and line).
@Suite(.serialized) struct ControlSocketAccessTests {
    func mode(_ path: String) -> mode_t {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o777 : 0
    }

    /// The line of `field` in the rig's `file` (1-based).
    func line(of field: String, in path: String) throws -> Int {
        let lines = try readTextFile(path).split(separator: "\n", omittingEmptySubsequences: false)
        return 1 + (lines.firstIndex { $0.hasPrefix(field + ":") } ?? -2)
    }

    @Test func ownerOnlyByDefault() throws {
        let rig = try DaemonRig()
        defer { rig.close() }
        try rig.startLock()
        #expect(mode(rig.lockState) == 0o700)  // the socket's own mode follows the umask (the units': 0077)
    }

    @Test func theBridgesUserWhenNamed() throws {
        let rig = try DaemonRig()
        defer { rig.close() }
        try rig.addToLockConfig("bridge_user: \(DaemonRig.bridgeUser)")
        try rig.startLock()
        #expect(mode(rig.lockState) == 0o710)
        #expect(mode(rig.lock!.controlPath) == 0o660)
        #expect(mode(rig.lockState + "/" + StateStores.lockFile) == 0o600)
    }

    /// A name or a uid; either resolves to the user database's entry.
    @Test(arguments: [DaemonRig.bridgeUser, "\(DaemonRig.bridgeUserID)"])
    func aNameOrAUID(_ given: String) throws {
        let rig = try DaemonRig()
        defer { rig.close() }
        try rig.addToLockConfig("bridge_user: \"\(given)\"")
        try rig.addToPhoneConfig("bridge_user: \(given)")
        let lock = try LockSettings.load(try AgentProcesses.loadConfig(rig.directory + "/lock.yaml"))
        let phone = try PhoneSettings.load(try AgentProcesses.loadConfig(rig.directory + "/phone.yaml"))
        for access in [lock.controlSocketAccess, phone.controlSocketAccess] {
            guard case .bridge(let user) = access else { Issue.record("no bridge user from \(given)"); continue }
            #expect(user.uid == DaemonRig.bridgeUserID && user.name == DaemonRig.bridgeUser)
        }
    }

    /// Without `bridge_user` the bridge's uid is nobody special: refused every command.
    @Test func withoutBridgeUserNoPeerIsTheBridge() throws {
        let rig = try DaemonRig()
        defer { rig.close() }
        rig.connect(asUID: DaemonRig.bridgeUserID)
        try rig.startLock()
        #expect(try rig.send("status", to: rig.lock)
                == ["error uid \(DaemonRig.bridgeUserID) (pid 1) is not this agent's user, root, or its bridge_user: every command is refused"])
    }

    /// What `latchkey lock` / `latchkey phone` reads with `bridge_user: <value>` added: the
    /// configuration error (which they exit 78 with), its file and the field's line.
    func loadError(lock: Bool, bridgeUser value: String) throws -> (ConfigError?, path: String, line: Int) {
        let rig = try DaemonRig()
        defer { rig.close() }
        let path = rig.directory + (lock ? "/lock.yaml" : "/phone.yaml")
        if lock { try rig.addToLockConfig("bridge_user: \(value)") } else { try rig.addToPhoneConfig("bridge_user: \(value)") }
        do {
            let file = try AgentProcesses.loadConfig(path)
            if lock { _ = try LockSettings.load(file) } else { _ = try PhoneSettings.load(file) }
        } catch let error as ConfigError {
            return (error, path, try line(of: "bridge_user", in: path))
        }
        return (nil, path, 0)
    }

    static func noSuchUser(_ name: String) -> String {
        "field 'bridge_user': no user '\(name)' on this system (`getent passwd \(name)`): name the user the MQTT bridge "
            + "runs as (latchkey-mqtt, made by latchkey.sysusers.conf)"
    }

    @Test(arguments: [true, false])
    func aUserThatDoesNotExistIsAConfigurationError(lock: Bool) throws {
        for missing in ["latchkey-no-such-user", "4000000000"] {
            let (error, path, line) = try loadError(lock: lock, bridgeUser: missing)
            #expect(error?.description == "\(path):\(line): " + Self.noSuchUser(missing))
        }
    }

    /// The built binary, as systemd runs it: exit 78 and the file, line and field on standard error.
    @Test func theBinaryExits78ForAMissingUser() throws {
        let binary = try #require(ExitStatusTests.latchkeyBinary(), "the latchkey executable is built next to the tests")
        let rig = try DaemonRig()
        defer { rig.close() }
        try rig.addToLockConfig("bridge_user: latchkey-no-such-user")
        let path = rig.directory + "/lock.yaml"
        let loop = PosixEventLoop()
        let child = try ChildProcess(name: "lock", executable: binary, arguments: ["lock", "--config", path], loop: loop)
        var lines: [String] = []
        child.onLine = { lines.append($0) }
        let ended = try loop.run(until: { child.outputEnded }, timeout: .seconds(20))
        if !ended { child.stop(loop: loop) }
        #expect(ended)
        let status = child.waitForExit()
        #expect(status & 0x7f == 0 && (status >> 8) & 0xff == 78)
        let line = try line(of: "bridge_user", in: path)
        #expect(lines.contains("Error: \(path):\(line): " + Self.noSuchUser("latchkey-no-such-user")), "\(lines)")
    }

    @Test(arguments: ["root", "0"])
    func rootIsNoBridgeUser(_ given: String) throws {
        let (error, path, line) = try loadError(lock: true, bridgeUser: given)
        #expect(error?.description == "\(path):\(line): field 'bridge_user': '\(given)' is root, who has every command "
                + "already: name the user the MQTT bridge runs as (latchkey-mqtt)")
    }

    /// The agent's own user would make the bridge the owner: refused at start. The seam plays
    /// an agent running as the bridge's user.
    @Test func theAgentsOwnUserIsNoBridgeUser() throws {
        let rig = try DaemonRig()
        defer { rig.close() }
        try rig.addToLockConfig("bridge_user: \(DaemonRig.bridgeUser)")
        rig.peers = ControlPeerIdentification(agentUserID: DaemonRig.bridgeUserID) { _ in
            .success(PeerCredentials(pid: 1, uid: DaemonRig.bridgeUserID, gid: 0))
        }
        let line = try line(of: "bridge_user", in: rig.directory + "/lock.yaml")
        #expect {
            try rig.startLock()
        } throws: { error in
            guard let error = error as? RuntimeError else { return false }
            return error.exitStatus == 78 && error.description == "\(rig.directory)/lock.yaml:\(line): field 'bridge_user': "
                + "'\(DaemonRig.bridgeUser)' is this agent's own user, who has every command already: the MQTT bridge must "
                + "run as a user of its own (latchkey-mqtt)"
        }
        #expect(rig.lock == nil)
    }

    /// The old field made every member of the group the bridge: an old file stops with what to
    /// write instead, never starts with a changed meaning.
    @Test(arguments: [true, false])
    func theOldGroupFieldSaysWhatToWriteInstead(lock: Bool) throws {
        let rig = try DaemonRig()
        defer { rig.close() }
        for value in [true, false] {
            let path = rig.directory + (lock ? "/lock.yaml" : "/phone.yaml")
            let original = try readTextFile(path)
            defer { try? writeFile(path, original) }
            try writeFile(path, original + "\ncontrol_socket_group: \(value)\n")
            let line = try line(of: "control_socket_group", in: path)
            #expect {
                let file = try AgentProcesses.loadConfig(path)
                if lock { _ = try LockSettings.load(file) } else { _ = try PhoneSettings.load(file) }
            } throws: { error in
                let prefix = "\(path):\(line): field 'control_socket_group': is replaced by bridge_user: "
                return (error as? ConfigError)?.description
                    .hasPrefix(prefix + (value ? "write `bridge_user: latchkey-mqtt`" : "remove this line")) == true
            }
        }
    }

    /// The bridge's user must be in the socket's group to connect; when it is not, the start
    /// says so (a warning) rather than leaving the bridge to fail later. Root gives the file
    /// to each group.
    @Test(.enabled(if: getuid() == 0, "needs root to chown")) func aBridgeUserOutsideTheSocketsGroupIsNamed() throws {
        let dir = try RuntimeDirectory.makeTemporary(prefix: "latchkey-access")
        defer { RuntimeDirectory.remove(dir) }
        let socket = dir + "/control.sock"
        try writeFile(socket, "")
        guard case .found(let user) = BridgeUser.lookUp(DaemonRig.bridgeUser) else { Issue.record("no such user"); return }
        let site = ConfigError(file: "lock.yaml", line: 3, field: "bridge_user", message: "")
        let access = ControlSocketAccess.bridge(BridgeUser(uid: user.uid, name: user.name, group: user.group, site: site))
        // Its own primary group: it can connect.
        #expect(chown(socket, 0, user.group) == 0)
        #expect(access.unreachable(socket: socket) == nil)
        // Root's group, which it is not in.
        #expect(chown(socket, 0, 0) == 0)
        #expect(access.unreachable(socket: socket) == "bridge_user \(user.name) (uid \(user.uid)) is not in the control "
                + "socket's group (gid 0): the MQTT bridge cannot connect; add it (latchkey.sysusers.conf: m \(user.name) latchkey)")
        #expect(ControlSocketAccess.owner.unreachable(socket: socket) == nil)
    }
}
