import LatchkeyConfig
import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeySettings
import LatchkeyTransport
import Testing
@testable import LatchkeyDaemons
@testable import LatchkeyDemo

struct SettingsTests {
    let lockYAML = """
        name: Front Door
        transport: sim
        sim:
          address: "C0:FF:EE:00:00:01"
        state_directory: /tmp/x
        gpio:
          chip: demo-lock
          actuator: motor
          motor_run_ms: 300
          unlock_line: motor_unlock
          lock_line: motor_lock
          door_line: door
          door_bias: pull-up
        lock:
          auto_relock_seconds: 4
          departure_grace_seconds: 2
          arrival_response_limit_ms: 120
          arrival_interval_ceiling_ms: 37.5
          arrival_relock_unless_opened_seconds: 0
        """

    @Test func readsAFullLockConfiguration() throws {
        let s = try LockSettings.load(ConfigFile(path: "lock.yaml", text: lockYAML))
        #expect(s.agent.name == "Front Door")
        #expect(s.behaviour.autoRelockTime == .seconds(4))
        #expect(s.agent.departureGrace == .seconds(2))
        #expect(s.agent.arrivalPolicy.challengeToCommandLimit == .milliseconds(120))
        #expect(s.agent.arrivalPolicy.connectionIntervalCeiling == .microseconds(37_500))
        #expect(s.agent.arrivalPolicy.relockUnlessOpenedWithin == nil, "0 turns the arrival relock off")
        #expect(s.wiring.actuator == .motor(runTime: .milliseconds(300)))
        #expect(s.wiring.door?.bias == .pullUp)
        guard case .sim(_, let address, _) = s.transport else { Issue.record("expected sim"); return }
        #expect(address == BluetoothAddress(string: "C0:FF:EE:00:00:01"))
    }

    @Test func zeroTurnsAutoRelockOff() throws {
        let text = lockYAML.replacingOccurrences(of: "auto_relock_seconds: 4", with: "auto_relock_seconds: 0")
        #expect(try LockSettings.load(ConfigFile(path: "lock.yaml", text: text)).behaviour.autoRelockTime == nil)
    }

    @Test func aBadValueNamesFileLineAndField() throws {
        let text = lockYAML.replacingOccurrences(of: "motor_run_ms: 300", with: "motor_run_ms: fast")
        let e = #expect(throws: ConfigError.self) { try LockSettings.load(ConfigFile(path: "/etc/latchkey/lock.yaml", text: text)) }
        #expect(e?.description == "/etc/latchkey/lock.yaml:9: field 'gpio.motor_run_ms': expected a number of milliseconds, found 'fast'")
    }

    @Test func aMisspeltFieldIsRefused() throws {
        let text = lockYAML.replacingOccurrences(of: "departure_grace_seconds", with: "departure_grase_seconds")
        let e = #expect(throws: ConfigError.self) { try LockSettings.load(ConfigFile(path: "lock.yaml", text: text)) }
        #expect(e?.field == "lock.departure_grase_seconds")
        #expect(e?.line == 16)
    }

    @Test func aMotorNeedsItsLockLine() throws {
        let text = lockYAML.replacingOccurrences(of: "  lock_line: motor_lock\n", with: "")
        let e = #expect(throws: ConfigError.self) { try LockSettings.load(ConfigFile(path: "lock.yaml", text: text)) }
        #expect(e?.field == "gpio.lock_line")
    }

    @Test func checksAcrossFieldsNameTheLineToo() throws {
        let long = lockYAML.replacingOccurrences(of: "name: Front Door", with: "name: " + String(repeating: "x", count: 30))
        let e = #expect(throws: ConfigError.self) { try LockSettings.load(ConfigFile(path: "lock.yaml", text: long)) }
        #expect(e?.description == "lock.yaml:1: field 'name': at most 29 bytes fit in advertising data")
        // A missing field points at the section that lacks it.
        let motor = lockYAML.replacingOccurrences(of: "  lock_line: motor_lock\n", with: "")
        let m = #expect(throws: ConfigError.self) { try LockSettings.load(ConfigFile(path: "lock.yaml", text: motor)) }
        #expect(m?.line == 6)
    }

    @Test func phoneSettingsRequireTheLockWithAKeyMadeOnTheLock() throws {
        // Without key_id, the lock's address comes from paired.key (`latchkey phone pair`).
        let e = #expect(throws: ConfigError.self) {
            try PhoneSettings.load(ConfigFile(path: "phone.yaml",
                                              text: "sim:\n  address: \"C0:FF:EE:00:00:02\"\nkey_id: 1\nkey_secret_file: /tmp/k\n"))
        }
        #expect(e?.field == "lock_address")
        let ok = try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: """
            sim:
              address: "C0:FF:EE:00:00:02"
            lock_address: "C0:FF:EE:00:00:01"
            key_id: 1
            key_secret_file: /tmp/k
            grace_seconds: 2
            arrival_intent_window_seconds: 45
            alerts:
              on_notification: true
            """))
        #expect(ok.gracePeriod == .seconds(2))
        #expect(ok.arrivalIntentWindow == .seconds(45))
        #expect(ok.connectOptions.notifyOnNotification)
    }

    @Test func thePhoneAsksForTheConnectionIntervalItIsGivenOrBLEsShortest() throws {
        let base = "sim:\n  address: \"C0:FF:EE:00:00:02\"\n"
        #expect(try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: base)).connectionInterval == .microseconds(7_500))
        let set = try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: base + "connection_interval_ms: 30\n"))
        #expect(set.connectionInterval == .milliseconds(30))
        for bad in ["5", "4001"] {
            let e = #expect(throws: ConfigError.self) {
                try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: base + "connection_interval_ms: \(bad)\n"))
            }
            #expect(e?.field == "connection_interval_ms")
        }
    }

    @Test func eventLinesRoundTripThroughTheDemoParser() {
        let line = #"{"event":"lock.command_accepted","t_ms":12.5,"key":"1","op":"arrival-unlock","note":"a \"q\""}"#
        let e = EventLine(parsing: line)
        #expect(e?.name == EventKind.lockCommandAccepted.name)
        #expect(e?.field("op") == "arrival-unlock")
        #expect(e?.field("note") == "a \"q\"")
        #expect(EventLine(parsing: "Error: something") == nil)
    }
}
