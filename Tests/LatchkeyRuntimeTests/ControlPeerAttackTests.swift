#if canImport(Glibc)
import Glibc
#endif
import LatchkeyLock
import LatchkeyPosix
@testable import LatchkeyRuntime
import LatchkeySecurity
import LatchkeyTransport
import Testing

/// The attacker is another user the control socket's mode lets in (`control_socket_group:
/// true` opens it to the MQTT bridge's user; a compromised bridge is that user). The daemons
/// identify each connection by the kernel's SO_PEERCRED; here the same seam hands them the
/// attacker's uid. What the bridge needs works; pairing, suspension, execution modes and
/// acting as any key but the one lock.yaml names for the bridge are refused with an error
/// line and a `*.control_refused` warning event, and change nothing.
@Suite(.serialized) final class ControlPeerAttackTests {
    static let attackerUID: UInt32 = 4242
    let rig: DaemonRig
    /// The uid the daemons see on the next connection: the attacker's unless a test speaks as the owner.
    var peerUID = ControlPeerAttackTests.attackerUID

    init() throws {
        rig = try DaemonRig()
        let owner = PeerCredentials.currentUserID
        rig.peers = ControlPeerIdentification(agentUserID: owner) { [unowned self] _ in
            .success(PeerCredentials(pid: 777, uid: self.peerUID, gid: 4242))
        }
        try StateStores.openKeys(rig.lockState).add(PhoneKey(id: 9, name: "mqtt-bridge", secret: CommandSealing.newSecret(),
                                                             role: .user))
        try rig.addToLockConfig("control_socket_group: true\nbridge_key_id: 9")
    }

    deinit { rig.close() }

    func startLock() throws {
        try rig.startLock()
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .locked })
    }

    func refused(_ command: String, by uid: UInt32 = attackerUID) throws -> Bool {
        let marks = rig.lockEvents("lock.control_refused").count
        let reply = try rig.send(command, to: rig.lock)
        return reply.count == 1 && reply[0].hasPrefix("error `\(command.split(separator: " ")[0])` is only for the agent's own user and root; uid \(uid) (pid 777) may use")
            && rig.lockEvents("lock.control_refused").count == marks + 1
    }

    @Test func theBridgesUserCannotOpenAPairingWindowOrAnswerOne() throws {
        try startLock()
        #expect(try refused("pair 120 admin yes attacker-phone"))
        #expect(try refused("pair-confirm 123456"))
        #expect(try refused("pair-reject"))
        #expect(try refused("fingerprint"))
        #expect(rig.lockEvents("lock.pairing_open").isEmpty)
        let event = rig.lockEvents("lock.control_refused").first
        #expect(event?.field("command") == "pair" && event?.field("uid") == "4242" && event?.field("pid") == "777")
        // The journal files it as a warning.
        #expect(event?.journaldPriority == .warning)
    }

    @Test func theBridgesUserCannotSuspendTheLockOrChangeItsExecution() throws {
        try startLock()
        #expect(try refused("suspend"))
        #expect(try refused("execution background"))
        peerUID = PeerCredentials.currentUserID
        #expect(try rig.send("status", to: rig.lock).first?.contains("execution=foreground suspended=false") == true)
    }

    @Test func theBridgesUserActsOnlyAsTheBridgesKey() throws {
        try startLock()
        // Key 1 is the owner's phone: the attacker cannot name it (nor any key).
        #expect(try rig.send("bridge unlock 1", to: rig.lock) == ["error usage: bridge lock|unlock|wrong-code (the key is bridge_key_id in lock.yaml)"])
        #expect(rig.lock!.agent.controller.lockState == .locked)
        #expect(rig.lockEvents("lock.command_accepted").isEmpty)
        // What the bridge may do, it does as key 9, the one lock.yaml names.
        #expect(try rig.send("bridge unlock", to: rig.lock).first?.hasPrefix("ok accepted") == true)
        #expect(rig.lockEvents("lock.command_accepted").last?.field("key") == "9")
    }

    @Test func theBridgesUserGetsWhatTheBridgeNeeds() throws {
        try startLock()
        #expect(try rig.send("status", to: rig.lock).first?.hasPrefix("ok lock=locked") == true)
        #expect(try rig.send("state", to: rig.lock) == ["ok lock=locked door=closed actuator=enabled"])
        #expect(try rig.send("events 1", to: rig.lock).last?.hasPrefix("ok events next=") == true)
        #expect(rig.lockEvents("lock.control_refused").isEmpty)
    }

    @Test func unreadableCredentialsAreNotTrusted() throws {
        rig.peers = ControlPeerIdentification(agentUserID: PeerCredentials.currentUserID) { _ in
            .failure(SystemError(.badFileDescriptor, call: "getsockopt(SO_PEERCRED)"))
        }
        try startLock()
        let reply = try rig.send("pair 120 admin yes attacker-phone", to: rig.lock)
        #expect(reply.first?.hasPrefix("error `pair` is only for the agent's own user and root; a peer with unreadable credentials") == true)
        #expect(rig.lockEvents("lock.pairing_open").isEmpty)
    }

    @Test func theOwnerAndRootKeepEveryCommand() throws {
        try startLock()
        for uid in [PeerCredentials.currentUserID, 0] {
            peerUID = uid
            #expect(try rig.send("fingerprint", to: rig.lock).first?.hasPrefix("ok ") == true)
        }
        #expect(rig.lockEvents("lock.control_refused").isEmpty)
    }

    /// The phone's socket, opened to the group the same way: the bridge's user may read
    /// presence and send the arrival intent, never have the phone seal a command with its key.
    @Test func theBridgesUserCannotMakeThePhoneUnlock() throws {
        try rig.startLinked()
        for command in ["unlock", "lock", "probe 3", "mode passage", "suspend"] {
            let marks = rig.phoneEvents("phone.control_refused").count
            let reply = try rig.send(command, to: rig.phone)
            #expect(reply.first?.hasPrefix("error `\(command.split(separator: " ")[0])` is only for the agent's own user and root") == true)
            #expect(rig.phoneEvents("phone.control_refused").count == marks + 1)
        }
        // Only the phone's own `present`, which every link sends (the rig waits for it to prove the lock).
        #expect(rig.phoneEvents("phone.command_sent").allSatisfy { $0.field("op") == "present" })
        // The lock may still be driving its start-up relock (motor_run_ms) on a fast link.
        #expect(rig.wait(until: { self.rig.lock!.agent.controller.lockState == .locked }))
        #expect(rig.lockEvents("lock.command_accepted").isEmpty, "no command reached the lock")
        #expect(try rig.send("status", to: rig.phone).first?.hasPrefix("ok presence=") == true)
        #expect(try rig.send("arriving", to: rig.phone).first?.hasPrefix("ok arriving") == true)
    }
}

/// The same attack by a real process of another user, with nothing injected: `latchkey
/// lock-ctl` run as uid 65534 (nobody) in the lock's group through setpriv(1), against the
/// lock daemon's socket with `control_socket_group: true`. The kernel's SO_PEERCRED is what
/// the lock goes by. Needs root (to switch user) and the built `latchkey` beside the tests.
@Suite(.serialized, .enabled(if: getuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0
                                && ExitStatusTests.latchkeyBinary() != nil,
                             "needs root, setpriv(1) and the latchkey executable"))
final class ControlPeerRealUserTests {
    static let nobody: UInt32 = 65534
    let rig: DaemonRig

    init() throws {
        rig = try DaemonRig()
        try StateStores.openKeys(rig.lockState).add(PhoneKey(id: 9, name: "mqtt-bridge", secret: CommandSealing.newSecret(),
                                                             role: .user))
        try rig.addToLockConfig("control_socket_group: true\nbridge_key_id: 9")
        // The scratch directory (0700 from mkdtemp) opened to the group, like /var/lib/latchkey.
        #expect(chmod(rig.directory, 0o710) == 0)
        try rig.startLock()
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .locked })
        tick()
    }

    deinit { rig.close() }

    private var runs = 0
    private var ticker: Scheduled?

    /// Keeps the loop waking while a child runs, so its exit is seen (no SIGCHLD watch here).
    private func tick() { ticker = rig.loop.schedule(after: .milliseconds(20)) { [weak self] in self?.tick() } }

    /// `latchkey lock-ctl COMMAND` as nobody in the agent's group; its output.
    func asNobody(_ command: [String]) throws -> String {
        runs += 1
        let output = rig.directory + "/nobody-\(runs).txt"
        let pid = try spawn("/usr/bin/setpriv", ["--reuid", "\(Self.nobody)", "--regid", "\(getgid())", "--clear-groups",
                                                 ExitStatusTests.latchkeyBinary()!, "lock-ctl", "--state-dir", rig.lockState]
                                                 + command, output: output)
        var status: Int32 = 0
        #expect(rig.wait { waitpid(pid, &status, WNOHANG) == pid })
        return (try? readTextFile(output)) ?? ""
    }

    @Test func anotherUserGetsTheBridgesCommandsAndNoPairing() throws {
        #expect(try asNobody(["state"]).hasPrefix("ok lock=locked door=closed actuator=enabled"))
        let refused = try asNobody(["pair", "60", "admin", "yes", "evil"])
        #expect(refused.hasPrefix("error `pair` is only for the agent's own user and root; uid 65534 (pid "))
        #expect(rig.lockEvents("lock.pairing_open").isEmpty)
        #expect(rig.lockEvents("lock.control_refused").map { $0.field("uid") } == ["65534"])
    }
}
