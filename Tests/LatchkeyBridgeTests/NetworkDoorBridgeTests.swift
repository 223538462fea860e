import FoundationEssentials
import LatchkeyMQTT
import LatchkeyTransport
import Testing
@testable import LatchkeyBridge

/// Someone who can publish on the lock's command topic (docs/SECURITY.md, "The network
/// door"): what they send costs the lock a bounded amount, is carried out once, and a code
/// guess learns nothing faster than the lock's lockout allows. On the simulated broker and
/// the manual loop: nothing here waits.
struct NetworkDoorBridgeTests {
    func rig(commands: Set<BridgeAction> = [.lock], code: String? = nil) throws -> BridgeRig {
        let rig = try BridgeRig(lock: BridgedLock(name: "Front Door", controlSocket: "-", topicPrefix: "latchkey/front-door",
                                                  commands: commands, unlockCode: code))
        rig.observe("latchkey/front-door/result")
        rig.bridge.start()
        rig.loop.advance(by: .zero)
        return rig
    }

    func results(_ rig: BridgeRig) -> [String] {
        rig.seen.filter { $0.topic == "latchkey/front-door/result" }.map(\.text)
    }

    @Test func anIdenticalCommandIsCarriedOutOnce() throws {
        let rig = try rig()
        let command = "{\"action\":\"lock\",\"ts\":\(rig.wall - 1),\"id\":\"c1\"}"
        rig.send(command)
        rig.send(command)  // captured and sent again within the age bound
        rig.send("{ \"id\":\"c1\", \"ts\":\(rig.wall - 1), \"action\":\"lock\" }")  // the same, respelt
        #expect(rig.agent.commands == ["bridge lock"])
        #expect(results(rig).dropFirst().allSatisfy { $0.contains("\"ok\":false") && $0.contains("duplicate") })
        // Another command (a new ts) goes through.
        rig.send("{\"action\":\"lock\",\"ts\":\(rig.wall),\"id\":\"c1\"}")
        #expect(rig.agent.commands == ["bridge lock", "bridge lock"])
    }

    @Test func aFloodIsRateLimitedPerLockWithAClearAnswer() throws {
        let rig = try rig()
        for i in 0..<12 { rig.send("{\"action\":\"lock\",\"ts\":\(rig.wall),\"id\":\"f\(i)\"}") }
        #expect(rig.agent.commands.count == BridgedLock.defaultCommandsPerMinute)
        let refused = results(rig).filter { $0.contains("rate limited") }
        #expect(refused.count == 2)
        #expect(refused.first?.contains("at most 10 commands a minute for this lock") == true)
        #expect(rig.logs.filter { $0.1.contains("rate limited") }.count == 1, "a flood is one log line")
        // A minute later the lock takes commands again.
        rig.loop.advance(by: .seconds(60))
        rig.wall += 60
        rig.send("{\"action\":\"lock\",\"ts\":\(rig.wall),\"id\":\"later\"}")
        #expect(rig.agent.commands.count == BridgedLock.defaultCommandsPerMinute + 1)
    }

    /// Junk anyone can publish costs the lock nothing and is not charged, and code guesses use
    /// their own allowance: neither keeps Home Assistant from locking the door.
    @Test func junkAndGuessesNeverUseUpTheLocksAllowance() throws {
        let rig = try rig(commands: [.lock, .unlock], code: "2468")
        for i in 0..<30 { rig.send("{\"action\":\"open-sesame\",\"ts\":\(rig.wall),\"id\":\"j\(i)\"}") }
        for i in 0..<30 { rig.send("not json \(i)") }
        for i in 0..<12 {
            rig.wall += 1
            rig.send("{\"action\":\"unlock\",\"ts\":\(rig.wall),\"code\":\"00\(i)\",\"id\":\"g\(i)\"}")
        }
        #expect(rig.agent.commands.filter { $0 == "bridge wrong-code" }.count <= BridgedLock.defaultCommandsPerMinute,
                "guesses are bounded")
        rig.send("{\"action\":\"lock\",\"ts\":\(rig.wall),\"id\":\"home-assistant\"}")
        #expect(rig.agent.commands.last == "bridge lock", "Home Assistant's lock still goes through")
    }

    @Test func wrongCodesCountOnTheLockAndARightGuessDuringTheLockoutLooksLikeAWrongOne() throws {
        let rig = try rig(commands: [.lock, .unlock], code: "2468")
        func unlock(_ code: String, _ id: String) {
            rig.wall += 1
            rig.send("{\"action\":\"unlock\",\"ts\":\(rig.wall),\"code\":\"\(code)\",\"id\":\"\(id)\"}")
        }
        for i in 0..<3 { unlock("000\(i)", "g\(i)") }
        #expect(rig.agent.commands == Array(repeating: "bridge wrong-code", count: 3), "each wrong code reaches the lock")
        #expect(results(rig).last?.contains("wrong code; the bridge's key is locked out for 15 s") == true)
        // Locked out: a wrong guess and the right code get the same answer, and nothing moves.
        unlock("1357", "wrong")
        unlock("2468", "right")
        // The answers have the same fields and differ in their id and times only.
        let last = try results(rig).suffix(2).map { try JSONDecoder().decode([String: JSONValue].self, from: Data($0.utf8)) }
        #expect(last[0].keys.sorted() == last[1].keys.sorted())
        for key in ["action", "ok", "detail"] { #expect(last[0][key] == last[1][key], "\(key)") }
        #expect(last[1]["detail"] == .text("key 9 is locked out after failed attempts"))
        #expect(rig.agent.lockState == "locked")
        #expect(rig.broker.retained["latchkey/front-door/state"]?.text == "LOCKED")
    }

    @Test func anArrivalIntentIsBoundedLikeACommand() throws {
        let rig = try BridgeRig()
        rig.observe("latchkey/phone/alice/result")
        let phoneLink = FakeLockLink(loop: rig.loop)
        let discovery = HomeAssistantDiscovery(discoveryPrefix: "homeassistant", bridgeAvailability: "a", softwareVersion: "0")
        _ = PhoneBridge(phone: BridgedPhone(name: "Alice", controlSocket: "-", topicPrefix: "latchkey/phone/alice",
                                            arrivalIntent: true),
                        link: phoneLink, bridge: rig.bridge, discovery: discovery, maximumCommandAge: .seconds(10),
                        wallNow: { rig.wall })
        rig.bridge.start()
        rig.loop.advance(by: .zero)
        let intent = "{\"action\":\"arriving\",\"ts\":\(rig.wall),\"id\":\"a1\"}"
        for _ in 0..<3 {
            _ = try rig.observer.publish(MQTTMessage(topic: "latchkey/phone/alice/arriving/set", text: intent, qos: 1, retain: false))
            rig.loop.advance(by: .zero)
        }
        #expect(phoneLink.requests.filter { $0 == "arriving" }.count == 1)
        #expect(rig.broker.published.filter { $0.topic == "latchkey/phone/alice/result" && $0.text.contains("duplicate") }.count == 2)
    }
}

/// A result's field value, for comparing answers field by field.
enum JSONValue: Decodable, Equatable {
    case text(String), number(Double), bool(Bool)
    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else { self = .text(try c.decode(String.self)) }
    }
}
