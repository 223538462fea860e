#if canImport(Glibc)
import Glibc
#endif
import LatchkeyEvents
import LatchkeyLock
import LatchkeyPosix
@testable import LatchkeyControl
@testable import LatchkeyDaemons
import LatchkeySecurity
import LatchkeySimGPIO
import LatchkeyTransport
import Testing

/// Two attackers reach the control socket. One is the MQTT bridge's own user (`bridge_user`,
/// to which the socket's mode is opened; a compromised bridge is that user): what the bridge
/// needs works; pairing, suspension, execution modes and acting as any key but the one
/// lock.yaml names for the bridge are refused. The other is any other user the socket's mode
/// lets in (another member of the agent's group): it is refused every command, `status`
/// included. Each refusal is an error line and a `*.control_refused` warning event with the
/// peer's uid and pid, and changes nothing. The daemons identify each connection by the
/// kernel's SO_PEERCRED; here the same seam hands them the attacker's uid.
@Suite(.serialized) final class ControlPeerAttackTests {
    /// Another member of the agent's group: not the agent's user, not root, not `bridge_user`.
    static let otherUID: UInt32 = 4242
    static let bridgeUID = DaemonRig.bridgeUserID
    let rig: DaemonRig
    /// The uid the daemons see on the next connection: the bridge's unless a test speaks as another user.
    var peerUID = ControlPeerAttackTests.bridgeUID

    init() throws {
        rig = try DaemonRig()
        let owner = PeerCredentials.currentUserID
        rig.peers = ControlPeerIdentification(agentUserID: owner) { [unowned self] _ in
            .success(PeerCredentials(pid: 777, uid: self.peerUID, gid: 4242))
        }
        try StateStores.openKeys(rig.lockState).add(PhoneKey(id: 9, name: "mqtt-bridge", secret: CommandSealing.newSecret(),
                                                             role: .user))
        try rig.addToLockConfig("bridge_user: \(DaemonRig.bridgeUser)\nbridge_key_id: 9")
        try rig.addToPhoneConfig("bridge_user: \(DaemonRig.bridgeUser)")
    }

    deinit { rig.close() }

    func startLock() throws {
        try rig.startLock()
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .locked })
    }

    /// Refused to the bridge's user: the one error line, one more refusal event.
    func refused(_ command: String) throws -> Bool {
        let marks = rig.lockEvents(EventKind.lockControlRefused.name).count
        let reply = try rig.send(command, to: rig.lock)
        return reply.count == 1
            && reply[0].hasPrefix("error `\(command.split(separator: " ")[0])` is only for the agent's own user and root; "
                                  + "the bridge's user, uid \(Self.bridgeUID) (pid 777), may use")
            && rig.lockEvents(EventKind.lockControlRefused.name).count == marks + 1
    }

    /// The line every command of a peer that is not the bridge gets.
    static func refusedEntirely(_ who: String) -> [String] {
        ["error \(who) is not this agent's user, root, or its bridge_user: every command is refused"]
    }

    @Test func theBridgesUserCannotOpenAPairingWindowOrAnswerOne() throws {
        try startLock()
        #expect(try refused("pair 120 admin yes attacker-phone"))
        #expect(try refused("pair-confirm 123456"))
        #expect(try refused("pair-reject"))
        #expect(try refused("fingerprint"))
        #expect(rig.lockEvents(EventKind.lockPairingOpen.name).isEmpty)
        let event = rig.lockEvents(EventKind.lockControlRefused.name).first
        #expect(event?.field("command") == "pair" && event?.field("uid") == "\(Self.bridgeUID)" && event?.field("pid") == "777")
        #expect(event?.field("peer") == "bridge")
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
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).isEmpty)
        // What the bridge may do, it does as key 9, the one lock.yaml names.
        #expect(try rig.send("bridge unlock", to: rig.lock).first?.hasPrefix("ok accepted") == true)
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).last?.field("key") == "9")
    }

    @Test func theBridgesUserGetsWhatTheBridgeNeeds() throws {
        try startLock()
        #expect(try rig.send("status", to: rig.lock).first?.hasPrefix("ok lock=locked") == true)
        #expect(try rig.send("state", to: rig.lock) == ["ok lock=locked door=closed actuator=enabled"])
        #expect(try rig.send("events 1", to: rig.lock).last?.hasPrefix("ok events next=") == true)
        #expect(rig.lockEvents(EventKind.lockControlRefused.name).isEmpty)
    }

    /// Another member of the agent's group cannot act as the bridge: not move the bolt as the
    /// bridge's key, not read the audit log, the state or even `status`.
    @Test func anotherUserInTheAgentsGroupGetsNothing() throws {
        try startLock()
        peerUID = Self.otherUID
        for command in ["bridge unlock", "bridge lock", "events 1", "follow", "state", "status", "pair 120 admin yes evil", "suspend"] {
            let marks = rig.lockEvents(EventKind.lockControlRefused.name).count
            #expect(try rig.send(command, to: rig.lock) == Self.refusedEntirely("uid 4242 (pid 777)"), "\(command)")
            let event = rig.lockEvents(EventKind.lockControlRefused.name).last
            #expect(rig.lockEvents(EventKind.lockControlRefused.name).count == marks + 1)
            #expect(event?.field("command") == String(command.split(separator: " ")[0]) && event?.field("peer") == "other"
                    && event?.field("uid") == "4242" && event?.field("pid") == "777", "\(command)")
        }
        // Nothing moved, nothing was sealed as the bridge's key, nothing was logged for it.
        #expect(rig.lock!.agent.controller.lockState == .locked)
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).isEmpty && rig.lockEvents(EventKind.lockPairingOpen.name).isEmpty)
        #expect(try !unlockLineWentHigh())
        // The bridge's own user, on the same socket, still does what the bridge needs.
        peerUID = Self.bridgeUID
        #expect(try rig.send("state", to: rig.lock) == ["ok lock=locked door=closed actuator=enabled"])
        #expect(try rig.send("bridge unlock", to: rig.lock).first?.hasPrefix("ok accepted") == true)
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).last?.field("key") == "9")
    }

    func unlockLineWentHigh() throws -> Bool {
        try FileGPIOSimulator(directory: rig.directory + "/gpio/rig-lock").isHigh("motor_unlock")
    }

    @Test func unreadableCredentialsAreNotTrusted() throws {
        rig.peers = ControlPeerIdentification(agentUserID: PeerCredentials.currentUserID) { _ in
            .failure(SystemError(.badFileDescriptor, call: "getsockopt(SO_PEERCRED)"))
        }
        try startLock()
        for command in ["status", "bridge unlock", "pair 120 admin yes attacker-phone"] {
            #expect(try rig.send(command, to: rig.lock) == Self.refusedEntirely("a peer with unreadable credentials"))
        }
        #expect(rig.lockEvents(EventKind.lockControlRefused.name).last?.field("uid") == "unknown")
        #expect(rig.lockEvents(EventKind.lockPairingOpen.name).isEmpty && rig.lockEvents(EventKind.lockCommandAccepted.name).isEmpty)
    }

    @Test func theOwnerAndRootKeepEveryCommand() throws {
        try startLock()
        for uid in [PeerCredentials.currentUserID, 0] {
            peerUID = uid
            #expect(try rig.send("fingerprint", to: rig.lock).first?.hasPrefix("ok ") == true)
        }
        #expect(rig.lockEvents(EventKind.lockControlRefused.name).isEmpty)
    }

    /// The phone's socket, opened to the bridge's user the same way: that user may read
    /// presence and send the arrival intent, never have the phone seal a command with its key.
    @Test func theBridgesUserCannotMakeThePhoneUnlock() throws {
        try rig.startLinked()
        for command in ["unlock", "lock", "probe 3", "mode passage", "suspend"] {
            let marks = rig.phoneEvents(EventKind.phoneControlRefused.name).count
            let reply = try rig.send(command, to: rig.phone)
            #expect(reply.first?.hasPrefix("error `\(command.split(separator: " ")[0])` is only for the agent's own user and root") == true)
            #expect(rig.phoneEvents(EventKind.phoneControlRefused.name).count == marks + 1)
        }
        // Only the phone's own `present`, which every link sends (the rig waits for it to prove the lock).
        #expect(rig.phoneEvents(EventKind.phoneCommandSent.name).allSatisfy { $0.field("op") == "present" })
        // The lock may still be driving its start-up relock (motor_run_ms) on a fast link.
        #expect(rig.wait(until: { self.rig.lock!.agent.controller.lockState == .locked }))
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).isEmpty, "no command reached the lock")
        #expect(try rig.send("status", to: rig.phone).first?.hasPrefix("ok presence=") == true)
        #expect(try rig.send("arriving", to: rig.phone).first?.hasPrefix("ok arriving") == true)
    }

    /// Another member of the agent's group cannot say "arriving" (which lets the next re-link
    /// ask for an arrival unlock) nor read the phone's presence.
    @Test func anotherUserCannotTellThePhoneItIsArriving() throws {
        try rig.startLinked()
        peerUID = Self.otherUID
        for command in ["arriving", "status", "unlock"] {
            let marks = rig.phoneEvents(EventKind.phoneControlRefused.name).count
            #expect(try rig.send(command, to: rig.phone) == Self.refusedEntirely("uid 4242 (pid 777)"), "\(command)")
            #expect(rig.phoneEvents(EventKind.phoneControlRefused.name).count == marks + 1)
            #expect(rig.phoneEvents(EventKind.phoneControlRefused.name).last?.field("uid") == "4242")
        }
        #expect(rig.phoneEvents(EventKind.phoneArrivalIntent.name).isEmpty, "no arrival intent was set")
        // Only the phone's own `present`, which every link sends (the rig waits for it to prove the lock).
        #expect(rig.phoneEvents(EventKind.phoneCommandSent.name).allSatisfy { $0.field("op") == "present" })
        // The bridge's user sets it.
        peerUID = Self.bridgeUID
        #expect(try rig.send("arriving", to: rig.phone).first?.hasPrefix("ok arriving") == true)
        #expect(rig.phoneEvents(EventKind.phoneArrivalIntent.name).count == 1)
    }
}

/// The same attacks by real processes, with nothing injected: `latchkey lock-ctl` run through
/// setpriv(1) in the lock's group, as the lock's `bridge_user` (nobody) and as another user
/// (uid 4242), against the lock daemon's socket. The kernel's SO_PEERCRED is what the lock
/// goes by. Needs root (to switch user) and the built `latchkey` beside the tests.
@Suite(.serialized, .enabled(if: getuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0
                                && ExitStatusTests.latchkeyBinary() != nil,
                             "needs root, setpriv(1) and the latchkey executable"))
final class ControlPeerRealUserTests {
    static let other: UInt32 = 4242
    let rig: DaemonRig

    init() throws {
        rig = try DaemonRig()
        try StateStores.openKeys(rig.lockState).add(PhoneKey(id: 9, name: "mqtt-bridge", secret: CommandSealing.newSecret(),
                                                             role: .user))
        try rig.addToLockConfig("bridge_user: \(DaemonRig.bridgeUser)\nbridge_key_id: 9")
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

    /// `latchkey lock-ctl COMMAND` as `uid` in the agent's group; its output.
    func run(as uid: UInt32, _ command: [String]) throws -> String {
        runs += 1
        let output = rig.directory + "/peer-\(runs).txt"
        let pid = try spawn("/usr/bin/setpriv", ["--reuid", "\(uid)", "--regid", "\(getgid())", "--clear-groups",
                                                 ExitStatusTests.latchkeyBinary()!, "lock-ctl", "--state-dir", rig.lockState]
                                                 + command, output: output)
        var status: Int32 = 0
        #expect(rig.wait { waitpid(pid, &status, WNOHANG) == pid })
        return (try? readTextFile(output)) ?? ""
    }

    @Test func theBridgesUserGetsTheBridgesCommandsAndNoPairing() throws {
        #expect(try run(as: DaemonRig.bridgeUserID, ["state"]).hasPrefix("ok lock=locked door=closed actuator=enabled"))
        let refused = try run(as: DaemonRig.bridgeUserID, ["pair", "60", "admin", "yes", "evil"])
        #expect(refused.hasPrefix("error `pair` is only for the agent's own user and root; the bridge's user, "
                                  + "uid \(DaemonRig.bridgeUserID) (pid "))
        #expect(rig.lockEvents(EventKind.lockPairingOpen.name).isEmpty)
        #expect(rig.lockEvents(EventKind.lockControlRefused.name).map { $0.field("uid") } == ["\(DaemonRig.bridgeUserID)"])
    }

    @Test func anotherUserInTheGroupIsRefusedEverything() throws {
        for command in [["bridge", "unlock"], ["events", "1"], ["state"], ["status"]] {
            let reply = try run(as: Self.other, command)
            #expect(reply.hasPrefix("error uid 4242 (pid ") && reply.contains("every command is refused"), "\(command): \(reply)")
        }
        #expect(rig.lockEvents(EventKind.lockControlRefused.name).map { $0.field("uid") } == Array(repeating: "4242", count: 4))
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).isEmpty)
        #expect(rig.lock!.agent.controller.lockState == .locked)
    }
}
