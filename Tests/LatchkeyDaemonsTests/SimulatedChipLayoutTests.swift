import Foundation
import LatchkeyConfig
import LatchkeyGPIO
import LatchkeyLock
@testable import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeySettings
import LatchkeySim
import LatchkeySimGPIO
import Testing
import LatchkeyPosix

/// Running the agents by hand on a simulated chip: the lock's first start lays the chip
/// out from its own wiring, at rest, and `latchkey gpio-sim` reads and drives it.
@Suite struct SimulatedChipLayoutTests {
    final class Scratch {
        let path: String
        init() {
            path = try! RuntimeDirectory.makeTemporary(prefix: "latchkey-simchip")
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        var root: String { path + "/gpio" }

        func settings() throws -> LockSettings {
            try LockSettings.load(ConfigFile(path: "lock.yaml", text: """
                transport: sim
                sim:
                  address: "C0:FF:EE:00:00:01"
                state_directory: \(path)/state
                gpio:
                  chip: by-hand
                  actuator: motor
                  unlock_line: motor_unlock
                  lock_line: motor_lock
                  door_line: door
                  door_active_low: true
                  button_line: button
                  simulated_chip_root: \(root)
                """))
        }
    }

    @Test func theFirstStartLaysOutTheWiredLinesAtRest() throws {
        let s = Scratch()
        let settings = try s.settings()
        let created = try SimulatedChipLayout.ensure(root: s.root, wiring: settings.wiring)
        #expect(created == s.root + "/by-hand")
        let report = try SimulatedChipTool(settings).report()
        #expect(report.map(\.line) == ["motor_unlock", "motor_lock", "door", "button"])
        #expect(report.map(\.field) == ["unlock_line", "lock_line", "door_line", "button_line"])
        // The active-low door contact is pulled up: closed. The button is released.
        #expect(report.first { $0.line == "door" }?.pullHigh == true)
        #expect(report.first { $0.line == "button" }?.pullHigh == false)

        // What the lock itself reads from the laid-out chip: door closed, button released.
        let loop = ManualEventLoop()
        let hardware = try LockHardware.open(settings.wiring, chips: FileGPIOChipFinder(root: s.root, loop: loop), loop: loop)
        #expect(try hardware.sensors.door?.read() == false)
        #expect(try hardware.sensors.button?.read() == false)
    }

    @Test func anExistingChipIsLeftAsTheSimulatedWorldLeftIt() throws {
        let s = Scratch()
        let settings = try s.settings()
        try SimulatedChipLayout.ensure(root: s.root, wiring: settings.wiring)
        try SimulatedChipTool(settings).set("door", active: true)
        #expect(try SimulatedChipLayout.ensure(root: s.root, wiring: settings.wiring) == nil)
        #expect(try SimulatedChipTool(settings).report().first { $0.line == "door" }?.pullHigh == false)
    }

    @Test func settingAnInputFollowsItsActiveLevel() throws {
        let s = Scratch()
        let settings = try s.settings()
        try SimulatedChipLayout.ensure(root: s.root, wiring: settings.wiring)
        let tool = try SimulatedChipTool(settings)
        // The lines as the lock requests them (its wiring's active levels), read after the
        // file chip re-reads its pulls (what the agent's inotify watcher triggers).
        let loop = ManualEventLoop()
        let chip = try #require(try FileGPIOChipFinder(root: s.root, loop: loop).chip(labelled: "by-hand") as? FileGPIOChip)
        let door = try chip.requestInput("door", GPIOLineConfig(consumer: "test", activeLow: true))
        let button = try chip.requestInput("button", GPIOLineConfig(consumer: "test", activeLow: false))

        try tool.set("door", active: true)         // active-low: pulled down
        try tool.set("button", active: true)       // active-high: pulled up
        try chip.pollInputs()
        #expect(try door.read() == true)
        #expect(try button.read() == true)
        try tool.set("door", active: false)
        try chip.pollInputs()
        #expect(try door.read() == false)
    }

    @Test func anOutputOrUnknownNameIsRefusedWithTheInputsListed() throws {
        let s = Scratch()
        let settings = try s.settings()
        try SimulatedChipLayout.ensure(root: s.root, wiring: settings.wiring)
        let tool = try SimulatedChipTool(settings)
        #expect(throws: RuntimeError.self) { try tool.set("motor_unlock", active: true) }
        do {
            try tool.set("window", active: true)
            Issue.record("an unknown input was accepted")
        } catch {
            #expect("\(error)".contains("door (line door), button (line button)"))
        }
        // Nothing moved.
        #expect(try tool.report().map(\.pullHigh) == [false, false, true, false])
    }

    @Test func aLockOnARealChipHasNoSimulatedSide() throws {
        let s = Scratch()
        let settings = try LockSettings.load(ConfigFile(path: "lock.yaml", text: """
            transport: sim
            sim:
              address: "C0:FF:EE:00:00:01"
            gpio:
              chip: pinctrl-bcm2711
              unlock_line: GPIO17
            """))
        #expect(throws: RuntimeError.self) { try SimulatedChipTool(settings) }
        _ = s
    }
}
