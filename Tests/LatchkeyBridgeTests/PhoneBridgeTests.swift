import LatchkeyMQTT
import LatchkeySim
import LatchkeySimMQTT
import LatchkeyTransport
import Testing
@testable import LatchkeyBridge

/// A phone agent behind the control-socket text protocol: `status` and `arriving`.
final class FakePhoneLink: AgentLink {
    let loop: any EventLoop
    var presence = "away"
    var reachable = true
    var arrivals = 0
    init(loop: any EventLoop) { self.loop = loop }

    func request(_ command: String, line: @escaping (String) -> Void, done: @escaping (Bool, String) -> Void) {
        loop.execute { [self] in
            guard reachable else { return done(false, "error cannot reach the agent") }
            switch command {
            case "status": done(true, "ok presence=\(presence) linked=false transport_refusals=0 execution=foreground")
            case "arriving": arrivals += 1; done(true, "ok arriving: intent open for 120 s")
            default: done(false, "error unknown command")
            }
        }
    }

    func stream(_ command: String, line: @escaping (String) -> Void, closed: @escaping (String) -> Void) {}
}

struct PhoneBridgeTests {
    let loop = ManualEventLoop()
    let broker: SimulatedBroker
    let link: FakePhoneLink
    let bridge: Bridge
    let phone: PhoneBridge
    let wall = 1_750_000_000.0

    init() {
        broker = SimulatedBroker(loop: loop)
        link = FakePhoneLink(loop: loop)
        bridge = Bridge(connection: broker.connection(MQTTEndpoint(host: "sim", port: 1, clientID: "bridge")), loop: loop,
                        availabilityTopic: "latchkey/bridge/b/availability") { _, _ in }
        let discovery = HomeAssistantDiscovery(discoveryPrefix: "homeassistant",
                                               bridgeAvailability: "latchkey/bridge/b/availability", softwareVersion: "0.1.0")
        let wall = wall
        phone = PhoneBridge(phone: BridgedPhone(name: "Alice", controlSocket: "-", topicPrefix: "latchkey/phone/alice",
                                                arrivalIntent: true),
                            link: link, bridge: bridge, discovery: discovery, maximumCommandAge: .seconds(10), wallNow: { wall })
        bridge.start()
        loop.advance(by: .zero)
    }

    func send(_ text: String, retain: Bool = false) throws {
        let sender = broker.connection(MQTTEndpoint(host: "sim", port: 1, clientID: "ha"))
        sender.connect()
        loop.advance(by: .zero)
        _ = try sender.publish(MQTTMessage(topic: "latchkey/phone/alice/arriving/set", text: text, retain: retain))
        loop.advance(by: .zero)
    }

    @Test func presenceIsARetainedDeviceTrackerStateThatFollowsThePhone() {
        #expect(broker.retained["latchkey/phone/alice/presence"]?.text == "not_home")
        #expect(broker.retained["latchkey/phone/alice/availability"]?.text == "online")
        #expect(broker.retained["homeassistant/device_tracker/latchkey_phone_alice/presence/config"]?.text
            .contains("\"payload_home\":\"home\",\"payload_not_home\":\"not_home\",\"source_type\":\"bluetooth_le\"") == true)
        link.presence = "home"
        loop.advance(by: .seconds(5))
        #expect(broker.retained["latchkey/phone/alice/presence"]?.text == "home")
        link.reachable = false
        loop.advance(by: .seconds(5))
        #expect(broker.retained["latchkey/phone/alice/availability"]?.text == "offline")
    }

    /// Home Assistant's tracker says where the phone is: within the grace period after a lost
    /// link (`leaving`) or linked again near the door it is still `home`.
    @Test(arguments: [("home", "home"), ("leaving", "home"), ("nearby", "home"), ("arriving", "home"),
                      ("away", "not_home"), ("unknown", nil)] as [(String, String?)])
    func presenceMapsToTheTrackersState(presence: String, tracker: String?) {
        #expect(PhoneBridge.trackerState(presence) == tracker)
    }

    @Test func aFreshArrivalIntentReachesThePhoneAStaleOrRetainedOneDoesNot() throws {
        try send("{\"action\":\"arriving\",\"ts\":\(wall - 60)}")
        try send("{\"action\":\"arriving\",\"ts\":\(wall)}", retain: true)
        try send("{\"action\":\"unlock\",\"ts\":\(wall)}")
        #expect(link.arrivals == 0)
        try send("{\"action\":\"arriving\",\"ts\":\(wall - 1)}")
        #expect(link.arrivals == 1)
        #expect(broker.retained["latchkey/phone/alice/arriving/set"] == nil)
    }
}
