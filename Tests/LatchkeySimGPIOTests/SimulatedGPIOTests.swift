import LatchkeyGPIO
import LatchkeyLock
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTransport
import Testing

/// The in-process simulated chip keeps the rules every GPIO backend keeps.
@Suite struct SimulatedGPIOTests {
    let loop = ManualEventLoop()

    func chip() -> SimulatedGPIOChip {
        SimulatedGPIOChip(label: "pinctrl-bcm2711", lineNames: ["GPIO17", "GPIO22", "GPIO27"], loop: loop)
    }

    @Test func activeLowOutputIsRequestedHighAndDrivenLow() throws {
        let chip = chip()
        #expect(!chip.isHigh("GPIO17"), "lines start pulled down")
        let output = try chip.requestOutput("GPIO17", GPIOLineConfig(consumer: "lock", activeLow: true))
        #expect(chip.isHigh("GPIO17"), "requested inactive: physically high for an active-low relay board")
        #expect(!output.isActive)
        try output.set(true)
        #expect(!chip.isHigh("GPIO17"))
        #expect(output.isActive)
        try output.set(false)
        #expect(chip.isHigh("GPIO17"))
    }

    @Test func activeHighOutputFollowsItsValue() throws {
        let chip = chip()
        let output = try chip.requestOutput("GPIO22", GPIOLineConfig(consumer: "lock"))
        #expect(!chip.isHigh("GPIO22"))
        try output.set(true)
        #expect(chip.isHigh("GPIO22"))
    }

    @Test func aLineCanBeRequestedOnce() throws {
        let chip = chip()
        _ = try chip.requestOutput("GPIO17", GPIOLineConfig(consumer: "lock"))
        let error = #expect(throws: GPIOError.self) {
            _ = try chip.requestInput("GPIO17", GPIOLineConfig(consumer: "other"))
        }
        #expect(error?.code == .lineBusy)
        #expect(error?.line == "GPIO17")
        #expect(error?.chip == "pinctrl-bcm2711")
        #expect(chip.consumer(of: "GPIO17") == "lock")
    }

    @Test func unknownLinesAndChipsAreTypedErrors() throws {
        let chip = chip()
        let line = #expect(throws: GPIOError.self) { _ = try chip.requestOutput("GPIO4", GPIOLineConfig(consumer: "x")) }
        #expect(line?.code == .lineNotFound)
        let finder = GPIOChipSet([chip])
        #expect(try finder.chip(labelled: "pinctrl-bcm2711") === chip)
        let missing = #expect(throws: GPIOError.self) { _ = try finder.chip(labelled: "pinctrl-rp1") }
        #expect(missing?.code == .chipNotFound)
        #expect(missing?.chip == "pinctrl-rp1")
    }

    @Test func inputEdgesArriveThroughTheLoop() throws {
        let chip = chip()
        let input = try chip.requestInput("GPIO27", GPIOLineConfig(consumer: "door"))
        var edges: [GPIOEdge] = []
        input.onEdge = { edges.append($0) }
        #expect(try !input.read())
        chip.pull("GPIO27", high: true)
        #expect(edges.isEmpty, "never inside the caller's stack")
        #expect(try input.read())
        loop.run()
        #expect(edges == [GPIOEdge(isActive: true, time: loop.now)])
        chip.pull("GPIO27", high: true)
        loop.run()
        #expect(edges.count == 1, "no edge without a change")
    }

    @Test func activeLowInputIsInverted() throws {
        let chip = chip()
        chip.pull("GPIO27", high: true)
        let input = try chip.requestInput("GPIO27", GPIOLineConfig(consumer: "door", activeLow: true, bias: .pullUp))
        #expect(try !input.read())
        var edges: [Bool] = []
        input.onEdge = { edges.append($0.isActive) }
        chip.pull("GPIO27", high: false)
        loop.run()
        #expect(edges == [true])
    }
}

@Suite struct DebouncedInputTests {
    let loop = ManualEventLoop()

    func debounced() throws -> (SimulatedGPIOChip, DebouncedInput) {
        let chip = SimulatedGPIOChip(label: "c", lineNames: ["BUTTON"], loop: loop)
        let raw = try chip.requestInput("BUTTON", GPIOLineConfig(consumer: "t"))
        return (chip, try DebouncedInput(raw, interval: .milliseconds(20), loop: loop))
    }

    @Test func aBounceBurstIsOneEdge() throws {
        let (chip, input) = try debounced()
        var edges: [GPIOEdge] = []
        input.onEdge = { edges.append($0) }
        // A contact closing: five transitions 2 ms apart, settling high.
        for high in [true, false, true, false, true] {
            chip.pull("BUTTON", high: high)
            loop.advance(by: .milliseconds(2))
        }
        let lastChange = loop.now - .milliseconds(2)
        loop.advance(to: lastChange + .milliseconds(20) - .milliseconds(1))
        #expect(edges.isEmpty, "not yet stable for the whole interval")
        #expect(try !input.read())
        loop.advance(by: .milliseconds(1))
        #expect(edges == [GPIOEdge(isActive: true, time: lastChange + .milliseconds(20))])
        #expect(try input.read())
    }

    @Test func aBurstEndingWhereItStartedIsNoEdge() throws {
        let (chip, input) = try debounced()
        var edges: [GPIOEdge] = []
        input.onEdge = { edges.append($0) }
        for high in [true, false, true, false] {
            chip.pull("BUTTON", high: high)
            loop.advance(by: .milliseconds(3))
        }
        loop.advance(by: .seconds(1))
        #expect(edges.isEmpty)
    }

    @Test func aCleanPressAndReleaseAreTwoEdges() throws {
        let (chip, input) = try debounced()
        var edges: [Bool] = []
        input.onEdge = { edges.append($0.isActive) }
        chip.pull("BUTTON", high: true)
        loop.advance(by: .milliseconds(100))
        chip.pull("BUTTON", high: false)
        loop.advance(by: .milliseconds(100))
        #expect(edges == [true, false])
    }

    @Test func theDefaultIntervalIsTwentyMilliseconds() {
        #expect(DebouncedInput.defaultInterval == .milliseconds(20))
    }
}
