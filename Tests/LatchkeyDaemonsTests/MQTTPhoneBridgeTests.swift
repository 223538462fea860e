import LatchkeyBridge
@testable import LatchkeyDaemons
import LatchkeyEvents
import Testing

/// The phone agent behind the bridge, for real: the phone daemon linked to the lock on the
/// simulated radio, Debian's mosquitto, the bridge reaching the phone's control socket as
/// another user. Its presence is Home Assistant's device_tracker state; a fresh message on
/// the arrival-intent topic is the phone's `arriving` (the arrival intent's window).
@Suite(.serialized, .enabled(if: MosquittoBroker.isInstalled, "needs Debian's mosquitto and mosquitto-clients"))
final class MQTTPhoneBridgeTests {
    let world: BrokerRig
    init() throws { world = try BrokerRig(phone: true) }

    @Test func presenceIsTheTrackersStateAndTheArrivalTopicIsThePhonesIntent() throws {
        let rig = world.rig
        var settings = world.settings(port: world.broker.port, clientID: "bridge-phone")
        settings.phones = [BridgedPhone(name: "Rig Phone", controlSocket: rig.phone!.controlPath,
                                        topicPrefix: "latchkey/phone/rig-phone", arrivalIntent: true)]
        try world.start(settings)
        #expect(rig.wait { self.world.bridge?.isConnected ?? false })
        #expect(rig.wait { rig.phone!.agent.presence == .home })
        #expect(try world.retained("latchkey/phone/rig-phone/presence") == "home")
        #expect(try world.retained("homeassistant/device_tracker/latchkey_phone_rig-phone/presence/config")?
            .contains("\"state_topic\":\"latchkey/phone/rig-phone/presence\"") == true)
        #expect(try world.retained("homeassistant/button/latchkey_phone_rig-phone/arriving/config") != nil)

        // A stale intent does nothing; a fresh one is the phone's `arriving`.
        let now = Files.wallSeconds()
        #expect(try world.broker.publish("latchkey/phone/rig-phone/arriving/set", "{\"action\":\"arriving\",\"ts\":\(now - 60)}",
                                         user: nil) == 0)
        #expect(try world.broker.publish("latchkey/phone/rig-phone/arriving/set", "{\"action\":\"arriving\",\"ts\":\(now)}",
                                         user: nil) == 0)
        #expect(rig.wait { !rig.phoneEvents(EventKind.phoneArrivalIntent.name).isEmpty })
        #expect(rig.phoneEvents(EventKind.phoneArrivalIntent.name).count == 1)
        // As another user, the bridge asked for nothing the phone refuses it.
        #expect(rig.phoneEvents(EventKind.phoneControlRefused.name).isEmpty && rig.lockEvents(EventKind.lockControlRefused.name).isEmpty)
    }
}
