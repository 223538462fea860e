import Foundation
import LatchkeyAgents
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyManagers
import LatchkeyPosix
import LatchkeySecurity
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTransport
import Testing
@testable import LatchkeyControl
@testable import LatchkeyDaemons
import LatchkeyDemo
@testable import LatchkeySettings

/// The daemons' own wiring (`WiredLock`, `WiredPhone`: what `LockDaemon` and `PhoneDaemon`
/// run on the real-time loop) from configuration files, on a manual loop over an in-process
/// simulated air and chip: no process, socket or signal, and simulated time only.
@Suite struct WiringOnManualLoopTests {
    static let lockAddress = BluetoothAddress(0xC0FFEE000001)
    static let phoneAddress = BluetoothAddress(0xC0FFEE000002)

    final class World {
        let loop = ManualEventLoop()
        let air: SimulatedAir
        let chip: SimulatedGPIOChip
        let directory: String
        let lockEvents = RecordingEventSink()
        let phoneEvents = RecordingEventSink()
        var lock: WiredLock?
        var phone: WiredPhone?

        var lockState: String { directory + "/lock" }
        var phoneState: String { directory + "/phone" }

        init() throws {
            directory = try RuntimeDirectory.makeTemporary(prefix: "latchkey-wiring")
            air = SimulatedAir(loop: loop, seed: 5)
            _ = air.addDevice(address: WiringOnManualLoopTests.lockAddress, position: 0)
            _ = air.addDevice(address: WiringOnManualLoopTests.phoneAddress, position: 1)
            chip = SimulatedGPIOChip(label: "door", lineNames: ["motor_unlock", "motor_lock"], loop: loop)
            for dir in [lockState, phoneState] { mkdir(dir, 0o700) }
            let secret = CommandSealing.newSecret()
            try StateStores.openKeys(lockState).add(PhoneKey(id: 1, name: "phone", secret: secret, role: .user))
            try writeSecretFile(phoneState + "/key.hex", secret)
            // `transport: sim` names an air socket nobody opens: the wiring gets the
            // in-process air's devices instead of what the daemons would open.
            try writeFile(directory + "/lock.yaml", """
                name: Manual Door
                transport: sim
                sim:
                  air_socket: \(directory)/unused.sock
                  address: "\(WiringOnManualLoopTests.lockAddress)"
                state_directory: \(lockState)
                gpio:
                  chip: door
                  actuator: motor
                  motor_run_ms: 300
                  unlock_line: motor_unlock
                  lock_line: motor_lock
                lock:
                  auto_relock_seconds: 4
                """)
            try writeFile(directory + "/phone.yaml", """
                transport: sim
                sim:
                  air_socket: \(directory)/unused.sock
                  address: "\(WiringOnManualLoopTests.phoneAddress)"
                state_directory: \(phoneState)
                lock_address: "\(WiringOnManualLoopTests.lockAddress)"
                key_id: 1
                key_secret_file: \(phoneState)/key.hex
                """)
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func startLock() throws {
            let settings = try LockSettings.load(try AgentProcesses.loadConfig(directory + "/lock.yaml"))
            let stores = try StateStores.openLock(settings.stateDirectory, loop: loop)
            let lock = try WiredLock(settings, stores: stores, transport: air.device(WiringOnManualLoopTests.lockAddress)!,
                                     chips: GPIOChipSet([chip]), loop: loop, events: lockEvents, logger: .quiet)
            lock.start()
            self.lock = lock
        }

        func startPhone() throws {
            let settings = try PhoneSettings.load(try AgentProcesses.loadConfig(directory + "/phone.yaml"))
            let (store, restoration) = try StateStores.openPhone(settings.stateDirectory)
            phone = try WiredPhone(settings, key: try PhoneDaemon.key(settings), store: store, restoration: restoration,
                                   transport: air.device(WiringOnManualLoopTests.phoneAddress)!, loop: loop,
                                   events: phoneEvents, logger: .quiet)
        }

        /// Sends `line` to a dispatcher in-process, runs the loop until its last answer
        /// ("ok ..." or "error ..."), and returns every line answered.
        func ask(_ dispatcher: ControlDispatcher, _ line: String) -> [String] {
            var replies: [String] = []
            dispatcher.handle(line.split(separator: " ").map(String.init)) { replies.append($0) }
            _ = loop.advance(until: { replies.last.map { $0.hasPrefix("ok") || $0.hasPrefix("error") } ?? false },
                             limit: .seconds(10))
            return replies
        }
    }

    @Test func theDaemonsWiringLinksAndUnlocksOnAManualLoop() throws {
        let w = try World()
        try w.startLock()
        try w.startPhone()
        let lock = try #require(w.lock), phone = try #require(w.phone)
        let ready = w.loop.advance(until: {
            w.phoneEvents.names().contains("phone.gatt_ready") && lock.agent.controller.lockState == .locked
        }, limit: .seconds(10))
        #expect(ready, "the phone links and the lock settles locked: \(w.phoneEvents.names())")
        #expect(w.lockEvents.names().contains("lock.advertising"))

        // `phone-ctl unlock`, in-process: the phone's control commands, the sealed command over
        // the simulated air, the lock's gate, the motor's unlock line.
        let start = w.loop.now
        let replies = w.ask(phone.dispatcher, "unlock")
        #expect(replies.last?.hasPrefix("ok") == true, "the phone's answer: \(replies)")
        #expect(w.chip.isHigh("motor_unlock"), "the unlock line drives the motor")
        #expect(w.lockEvents.names().contains("lock.command_accepted"))
        #expect(w.loop.now - start < .seconds(1), "simulated time only: \(w.loop.now - start)")

        // The lock's control commands answer in-process too, on the state the unlock left.
        w.loop.advance(by: .milliseconds(400))  // the motor's 300 ms run
        let status = w.ask(lock.dispatcher, "status")
        #expect(status.contains { $0.contains("lock=unlocked") }, "the lock's status: \(status)")
        // The configured auto-relock, on the manual clock.
        let relocked = w.loop.advance(until: { lock.agent.controller.lockState == .locked }, limit: .seconds(6))
        #expect(relocked, "auto_relock_seconds: 4 relocks the door")
    }
}
