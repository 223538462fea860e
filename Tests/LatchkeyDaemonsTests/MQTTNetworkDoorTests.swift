#if canImport(Glibc)
import Glibc
#endif
import LatchkeyBridge
import LatchkeyControl
import LatchkeyEvents
import LatchkeyMQTT
import LatchkeyPosix
@testable import LatchkeyDaemons
@testable import LatchkeyDoctor
import LatchkeySecurity
import LatchkeyTransport
import Logging
import Testing

/// Someone on the broker (docs/SECURITY.md, "The network door"), against Debian's mosquitto on
/// 127.0.0.1 with the ACL docs/CONFIGURATION.md gives (examples/mosquitto-latchkey.acl, read
/// from the repository), the lock daemon and the bridge on the test's loop. The stranger is
/// an anonymous client and a broker user of some other device; Home Assistant is user
/// `homeassistant`, the bridge user `latchkey`.
@Suite(.serialized, .enabled(if: MosquittoBroker.isInstalled, "needs Debian's mosquitto and mosquitto-clients"))
final class MQTTNetworkDoorTests {
    static let acl = String(#filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3)
        .joined(separator: "/")) + "/examples/mosquitto-latchkey.acl"
    static let users = ["latchkey": "bridge-pw", "homeassistant": "ha-pw", "other": "other-pw"]
    let rig: DaemonRig
    var bridge: Bridge?
    var subscribers: [pid_t] = []
    var brokers: [MosquittoBroker] = []
    private var ticker: Scheduled?

    init() throws {
        rig = try DaemonRig()
        try rig.addBridgeKey()
        try rig.connectAsTheBridge()
        try rig.startLock()
        tick()
    }

    deinit {
        bridge?.stop()
        for s in subscribers { terminate(s) }
        for b in brokers { b.stop() }
        rig.close()
    }

    private func tick() { ticker = rig.loop.schedule(after: .milliseconds(20)) { [weak self] in self?.tick() } }

    func broker(acl: Bool, name: String) throws -> MosquittoBroker {
        let directory = rig.directory + "/" + name
        _ = mkdir(directory, 0o700)
        let b = try MosquittoBroker(directory: directory, users: Self.users,
                                    acl: acl ? try readTextFile(Self.acl) : nil, anonymous: true)
        brokers.append(b)
        #expect(rig.wait { b.isListening })
        return b
    }

    func settings(_ b: MosquittoBroker) -> MQTTSettings {
        MQTTSettings(endpoint: MQTTEndpoint(host: "127.0.0.1", port: b.port, clientID: "door-bridge", username: "latchkey",
                                            password: "bridge-pw", keepaliveSeconds: 10),
                     stateDirectory: b.directory + "/mqtt", discoveryPrefix: "homeassistant",
                     locks: [BridgedLock(name: "Rig Door", controlSocket: rig.lock!.controlPath, topicPrefix: "latchkey/rig-door",
                                         commands: [.lock, .unlock], unlockCode: "2468")],
                     phones: [], commandMaximumAge: .seconds(10), resultExpirySeconds: 60)
    }

    func startBridge(_ s: MQTTSettings) throws {
        var logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        logger.logLevel = .critical
        bridge = try BridgeDaemon.start(s, on: rig.loop, logger: logger)
    }

    func lines(_ file: String) -> [(topic: String, payload: String)] {
        ((try? readTextFile(file)) ?? "").split(separator: "\n").compactMap { line in
            let f = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            return f.count == 3 ? (String(f[0]), String(f[2])) : nil
        }
    }

    func unlock(_ b: MosquittoBroker, code: String, id: String, user: String?) throws {
        let payload = "{\"action\":\"unlock\",\"ts\":\(Files.wallSeconds()),\"code\":\"\(code)\",\"id\":\"\(id)\"}"
        _ = try b.publish("latchkey/rig-door/set", payload, user: user, password: user.flatMap { Self.users[$0] })
    }

    @Test func theDoctorFindsEverythingAStrangerCanDoOnAnOpenBroker() throws {
        let b = try broker(acl: false, name: "open")
        let findings = BridgeDoctor.run(settings(b), on: rig.loop, delivery: .milliseconds(500))
        let fixes = findings.filter { $0.verdict == .fix }.map(\.message)
        #expect(fixes.contains { $0.hasPrefix("the broker accepts an anonymous client") })
        #expect(fixes.contains { $0.hasPrefix("an anonymous client can read latchkey/rig-door/#") })
        #expect(fixes.contains { $0.hasPrefix("an anonymous client can publish on latchkey/rig-door/set") })
        #expect(Doctor.blocks(findings))
    }

    @Test func withTheDocumentedACLAStrangerNeitherReadsNorCommands() throws {
        let b = try broker(acl: true, name: "acl")
        let findings = BridgeDoctor.run(settings(b), on: rig.loop, delivery: .milliseconds(500))
        #expect(findings.filter { $0.verdict == .fix }.map(\.message).allSatisfy { $0.hasPrefix("the broker accepts an anonymous") })
        #expect(findings.contains(.ok("an anonymous client cannot read latchkey/rig-door/#")))
        #expect(findings.contains(.ok("an anonymous client cannot publish on latchkey/rig-door/set")))

        subscribers.append(try b.subscribe(["latchkey/#"], to: b.directory + "/ha.txt", user: "homeassistant", password: "ha-pw",
                                           clientID: "ha"))
        subscribers.append(try b.subscribe(["latchkey/#", "#"], to: b.directory + "/other.txt", user: "other",
                                           password: "other-pw", clientID: "other"))
        subscribers.append(try b.subscribe(["#"], to: b.directory + "/anonymous.txt", clientID: "anonymous"))
        try startBridge(settings(b))
        #expect(rig.wait { self.lines(b.directory + "/ha.txt").contains { $0.topic == "latchkey/rig-door/state" } })
        // Another device's user and an anonymous client send the right code: nothing moves.
        try unlock(b, code: "2468", id: "other", user: "other")
        try unlock(b, code: "2468", id: "anonymous", user: nil)
        // Home Assistant's goes through; it comes after theirs, so theirs were dropped by then.
        try unlock(b, code: "2468", id: "ha", user: "homeassistant")
        #expect(rig.wait { self.lines(b.directory + "/ha.txt").contains { $0.topic == "latchkey/rig-door/result"
            && $0.payload.contains("\"id\":\"ha\"") && $0.payload.contains("\"ok\":true") } })
        #expect(rig.wait { self.rig.lock!.agent.controller.lockState == .unlocked })
        let results = lines(b.directory + "/ha.txt").filter { $0.topic == "latchkey/rig-door/result" }
        #expect(results.count == 1, "only Home Assistant's command reached the bridge")
        #expect(rig.lockEvents(EventKind.lockCommandAccepted.name).count == 1)
        // The stranger read nothing under the prefix, retained or live.
        #expect(!lines(b.directory + "/other.txt").contains { $0.topic.hasPrefix("latchkey/") })
        #expect(!lines(b.directory + "/anonymous.txt").contains { $0.topic.hasPrefix("latchkey/") })
    }

    @Test func codeGuessesOverTheBrokerLockOutTheBridgesKeyAndTheStateStaysSilent() throws {
        let b = try broker(acl: true, name: "guess")
        subscribers.append(try b.subscribe(["latchkey/#"], to: b.directory + "/ha.txt", user: "homeassistant", password: "ha-pw",
                                           clientID: "ha"))
        try startBridge(settings(b))
        let results = { self.lines(b.directory + "/ha.txt").filter { $0.topic == "latchkey/rig-door/result" }.map(\.payload) }
        let states = { self.lines(b.directory + "/ha.txt").filter { $0.topic == "latchkey/rig-door/state" }.map(\.payload) }
        #expect(rig.wait { states().last == "LOCKED" })
        let settled = states().count
        for i in 0..<3 {
            try unlock(b, code: "000\(i)", id: "g\(i)", user: "homeassistant")
            #expect(rig.wait { results().count == i + 1 })
        }
        #expect(results().last?.contains("the bridge's key is locked out for 15 s") == true)
        try unlock(b, code: "2468", id: "right", user: "homeassistant")
        #expect(rig.wait { results().count == 4 })
        #expect(results().last?.contains("\"detail\":\"key 9 is locked out after failed attempts\"") == true)
        #expect(rig.lock!.agent.controller.lockState == .locked)
        #expect(states().dropFirst(settled).allSatisfy { $0 == "LOCKED" }, "\(states())")
        #expect(rig.lockEvents(EventKind.lockLockout.name).map { $0.field("key") } == ["9"])
    }
}
