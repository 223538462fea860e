import Foundation
import LatchkeyGPIO
@testable import LatchkeyLock
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTransport
import Testing

/// The file-backed chip another process can read and drive (gpio-sim's value/pull files).
@Suite struct FileGPIOChipTests {
    let loop = ManualEventLoop()
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory
            .appendingPathComponent("latchkey-gpio-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileGPIOChip.create(at: root + "/chip0", label: "other-chip", lineNames: ["X"])
        try FileGPIOChip.create(at: root + "/chip1", label: "sim-lock", lineNames: ["ACTUATOR", "DOOR", "BUTTON"])
    }

    func contents(_ relative: String) throws -> String {
        try String(contentsOfFile: root + "/chip1/" + relative, encoding: .utf8)
    }

    @Test func layoutFollowsGPIOSim() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(try contents("label") == "sim-lock\n")
        #expect(try contents("line1/name") == "DOOR\n")
        #expect(try contents("line1/value") == "0\n")
        #expect(try contents("line1/pull") == "pull-down\n")
    }

    @Test func chipsAreFoundByLabel() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let finder = FileGPIOChipFinder(root: root, loop: loop)
        let chip = try finder.chip(labelled: "sim-lock")
        #expect(chip.label == "sim-lock")
        let missing = #expect(throws: GPIOError.self) { _ = try finder.chip(labelled: "pinctrl-rp1") }
        #expect(missing?.code == .chipNotFound)
    }

    @Test func outputLevelIsWrittenAtomicallyForAnotherProcess() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let chip = try FileGPIOChip(directory: root + "/chip1", loop: loop)
        let output = try chip.requestOutput("ACTUATOR", GPIOLineConfig(consumer: "latchkey-lock", activeLow: true))
        let outside = try FileGPIOSimulator(directory: root + "/chip1")
        #expect(try outside.isHigh("ACTUATOR"), "active-low, requested inactive: high")
        #expect(try outside.consumer(of: "ACTUATOR") == "latchkey-lock")
        // A reader in the middle of reading keeps the file it opened: the new value is a
        // new file renamed over the old one, never the old one truncated and rewritten.
        let reader = try #require(FileHandle(forReadingAtPath: root + "/chip1/line0/value"))
        defer { try? reader.close() }
        try output.set(true)
        #expect(try !outside.isHigh("ACTUATOR"))
        #expect(String(decoding: try reader.readToEnd() ?? Data(), as: UTF8.self) == "1\n")
        #expect(try contents("line0/value") == "0\n")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root + "/chip1/line0")
        #expect(leftovers.sorted() == ["consumer", "edges", "name", "pull", "value"], "no temporary files left behind")
    }

    @Test func everyLevelDrivenIsLoggedInOrderWithItsTimeForAReaderThatComesLate() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let chip = try FileGPIOChip(directory: root + "/chip1", loop: loop)
        let output = try chip.requestOutput("ACTUATOR", GPIOLineConfig(consumer: "latchkey-lock", activeLow: true))
        var reader = try FileGPIOEdgeReader(directory: root + "/chip1")
        #expect(try reader.newLevels(of: "ACTUATOR") == [DrivenLevel(high: true, at: .zero)], "the request's own level")
        // A pulse much shorter than any reader's wake-up: the value file is back to high
        // before anyone looks, the log still holds both edges.
        loop.advance(by: .seconds(1))
        try output.set(true)
        loop.advance(by: .microseconds(20))
        try output.set(false)
        #expect(try FileGPIOSimulator(directory: root + "/chip1").isHigh("ACTUATOR"))
        #expect(try reader.newLevels(of: "ACTUATOR") == [
            DrivenLevel(high: false, at: .zero + .seconds(1)),
            DrivenLevel(high: true, at: .zero + .seconds(1) + .microseconds(20)),
        ])
        #expect(try reader.newLevels(of: "ACTUATOR").isEmpty, "each entry once")
        #expect(try reader.newLevels(of: "DOOR").isEmpty, "an input nobody drove")
    }

    @Test func anEntryStillBeingAppendedWaitsAndAGarbledOneIsAnError() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        var reader = try FileGPIOEdgeReader(directory: root + "/chip1")
        let log = try #require(FileHandle(forWritingAtPath: root + "/chip1/line0/edges"))
        defer { try? log.close() }
        try log.write(contentsOf: Data("1 50\n0 6".utf8))
        #expect(try reader.newLevels(of: "ACTUATOR") == [DrivenLevel(high: true, at: .zero + .nanoseconds(50))])
        try log.write(contentsOf: Data("0\n".utf8))
        #expect(try reader.newLevels(of: "ACTUATOR") == [DrivenLevel(high: false, at: .zero + .nanoseconds(60))])
        try log.write(contentsOf: Data("high soon\n".utf8))
        let error = #expect(throws: GPIOError.self) { _ = try reader.newLevels(of: "ACTUATOR") }
        #expect(error?.code == .invalidValue)
        #expect(error?.line == "ACTUATOR")
    }

    @Test func pulledInputsChangeAtTheNextPoll() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let chip = try FileGPIOChip(directory: root + "/chip1", loop: loop)
        let door = try chip.requestInput("DOOR", GPIOLineConfig(consumer: "latchkey-lock"))
        var edges: [Bool] = []
        door.onEdge = { edges.append($0.isActive) }
        let outside = try FileGPIOSimulator(directory: root + "/chip1")
        try outside.pull("DOOR", high: true)
        loop.run()
        #expect(edges.isEmpty, "nothing watches the file until the loop layer polls")
        try chip.pollInputs()
        loop.run()
        #expect(edges == [true])
        try chip.pollInputs()
        loop.run()
        #expect(edges == [true], "a poll without a change is no edge")
        #expect(chip.lineDirectories.first == root + "/chip1/line0")
    }

    @Test func aGarbledPullIsAnErrorNamingTheLine() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let chip = try FileGPIOChip(directory: root + "/chip1", loop: loop)
        let button = try chip.requestInput("BUTTON", GPIOLineConfig(consumer: "latchkey-lock"))
        try "sideways\n".write(toFile: root + "/chip1/line2/pull", atomically: true, encoding: .utf8)
        let error = #expect(throws: GPIOError.self) { try chip.pollInputs() }
        #expect(error?.code == .invalidValue)
        #expect(error?.line == "BUTTON")
        #expect(throws: GPIOError.self) { _ = try button.read() }
    }

    @Test func aWholeLockRunsOnTheFileChip() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        // The lock process keeps its chip object: its loop layer is what calls pollInputs().
        let chip = try FileGPIOChip(directory: root + "/chip1", loop: loop)
        let wiring = LockWiring(chipLabel: "sim-lock", actuator: .hold, unlockOutput: .init("ACTUATOR"),
                                door: .init("DOOR"))
        let hardware = try LockHardware.open(wiring, chips: GPIOChipSet([chip]), loop: loop)
        let lock = try LockController(loop: loop, hardware: hardware, journal: InMemoryDecisionJournal())
        lock.start(recovered: nil)
        // The demo's side, as another process would hold it.
        let outside = try FileGPIOSimulator(directory: root + "/chip1")
        #expect(try outside.consumer(of: "DOOR") == "latchkey-lock")

        lock.submit(LockCommand(.unlock, source: .remote))
        loop.run()
        #expect(try outside.isHigh("ACTUATOR"))

        try outside.pull("DOOR", high: true)
        try chip.pollInputs()
        loop.advance(by: DebouncedInput.defaultInterval)
        #expect(lock.doorState == .open)
        loop.advance(by: .seconds(30))
        #expect(try outside.isHigh("ACTUATOR"), "no relock into the open door")

        try outside.pull("DOOR", high: false)
        try chip.pollInputs()
        loop.advance(by: DebouncedInput.defaultInterval)
        #expect(lock.lockState == .locked)
        #expect(try !outside.isHigh("ACTUATOR"))
    }
}
