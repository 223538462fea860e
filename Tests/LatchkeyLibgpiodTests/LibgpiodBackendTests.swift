import LatchkeyGPIO
import LatchkeyLock
import LatchkeyPosix
import LatchkeyTransport
import Testing

@testable import LatchkeyLibgpiod

/// Which libgpiod API a test drives: the same tests run against both (`FakeLibgpiod` plays
/// the library and the kernel under it; the HIL VM runs the real ones on gpio-sim).
enum GPIODAPI: String, CaseIterable, CustomTestStringConvertible {
    case v1 = "libgpiod 1.6"
    case v2 = "libgpiod 2"

    var testDescription: String { rawValue }

    func backend(_ fake: FakeLibgpiod) -> any GPIODBackend {
        switch self {
        case .v1: Libgpiod1(fake.v1Table)
        case .v2: Libgpiod2(fake.v2Table)
        }
    }
}

/// LibgpiodChip and its lines over each libgpiod API: chips by label, lines by name,
/// requests with consumer, active-low and bias, outputs requested inactive, both edges
/// read from the request's fd, the kernel's debounce (v2), busy lines and read failures.
@Suite struct LibgpiodBackendTests {
    let fake = FakeLibgpiod(chips: [
        .init(device: "gpiochip0", label: "pinctrl-rp1", lines: ["ID_SDA", "", "GPIO17", "GPIO22", "GPIO27"]),
        .init(device: "gpiochip1", label: "latchkey-hil", lines: ["latch", "door", "button"]),
    ])
    let loop = PosixEventLoop()

    func finder(_ api: GPIODAPI, onError: ((GPIOError) -> Void)? = nil) -> LibgpiodChipFinder {
        LibgpiodChipFinder(loop: loop, library: .success(api.backend(fake)), devices: { [fake] in fake.devices },
                           onError: onError)
    }

    @Test(arguments: GPIODAPI.allCases)
    func aChipIsFoundByLabelAndAMissingOneListsTheChipsThatExist(_ api: GPIODAPI) throws {
        try fake.run {
            let chip = try #require(try finder(api).chip(labelled: "latchkey-hil") as? LibgpiodChip)
            #expect(chip.name == "gpiochip1")
            let error = #expect(throws: GPIOError.self) { _ = try finder(api).chip(labelled: "pinctrl-bcm2711") }
            #expect(error?.code == .chipNotFound)
            #expect(error?.detail == "GPIO chips present: gpiochip0 'pinctrl-rp1', gpiochip1 'latchkey-hil'")
            #expect(try GPIOInventory.lines(ofChipLabelled: "pinctrl-rp1", library: .success(api.backend(fake)),
                                            devices: { fake.devices })
                    == ("gpiochip0", ["ID_SDA", "", "GPIO17", "GPIO22", "GPIO27"],
                        api == .v1 ? "libgpiod.so.2 (libgpiod 1.6.3)" : "libgpiod.so.3 (libgpiod 2.1.3)"))
        }
    }

    @Test(arguments: GPIODAPI.allCases)
    func aMissingLineListsTheChipsNamedLines(_ api: GPIODAPI) throws {
        try fake.run {
            let chip = try finder(api).chip(labelled: "pinctrl-rp1")
            let error = #expect(throws: GPIOError.self) { _ = try chip.requestOutput("GPIO4", GPIOLineConfig(consumer: "c")) }
            #expect(error?.code == .lineNotFound)
            #expect(error?.detail == "no line of that name on gpiochip0; its named lines: ID_SDA GPIO17 GPIO22 GPIO27")
        }
    }

    @Test(arguments: GPIODAPI.allCases)
    func anOutputIsRequestedInactiveWithItsConsumerActiveLowAndBias(_ api: GPIODAPI) throws {
        try fake.run {
            let chip = try finder(api).chip(labelled: "latchkey-hil")
            let latch = try chip.requestOutput("latch", GPIOLineConfig(consumer: "latchkey-lock", activeLow: true,
                                                                      bias: .pullDown))
            #expect(fake.level("latch"), "active-low and requested inactive: the line is driven high by the request")
            #expect(fake.held.count == 1)
            #expect(fake.held.first?.consumer == "latchkey-lock")
            #expect(fake.held.first?.output == true)
            #expect(fake.held.first?.activeLow == true)
            #expect(fake.held.first?.bias == .pullDown)
            try latch.set(true)
            #expect(!fake.level("latch"))
            #expect(latch.isActive)
            try latch.set(false)
            #expect(fake.level("latch"))
        }
    }

    @Test(arguments: GPIODAPI.allCases, [GPIOBias.asIs, .disabled, .pullUp, .pullDown])
    func everyBiasReachesTheKernel(_ api: GPIODAPI, _ bias: GPIOBias) throws {
        try fake.run {
            let chip = try finder(api).chip(labelled: "latchkey-hil")
            let door = try chip.requestInput("door", GPIOLineConfig(consumer: "c", bias: bias))
            #expect(fake.held.map(\.bias) == [bias])
            #expect(fake.held.first?.activeLow == false)
            withExtendedLifetime(door) {}  // a v2 request is released with its line object
        }
    }

    @Test(arguments: GPIODAPI.allCases)
    func anInputReportsBothEdgesAndItsValueLogically(_ api: GPIODAPI) throws {
        try fake.run {
            fake.drive("door", high: true)  // idle high: an active-low reed switch, closed door
            let chip = try finder(api).chip(labelled: "latchkey-hil")
            let door = try chip.requestInput("door", GPIOLineConfig(consumer: "latchkey-lock", activeLow: true,
                                                                   bias: .pullUp))
            #expect(fake.held.first?.bothEdges == true)
            #expect(try door.read() == false)
            var edges: [Bool] = []
            door.onEdge = { edges.append($0.isActive) }
            fake.drive("door", high: false)
            fake.drive("door", high: true)
            fake.drive("door", high: false)
            #expect(try loop.run(until: { edges.count == 3 }, timeout: .seconds(5)))
            #expect(edges == [true, false, true])
            #expect(try door.read() == true)
        }
    }

    /// libgpiod 2 hands the debounce to the kernel and the lock adds none; 1.6 has no
    /// debounce in its API, so its chip says so and `LockHardware` debounces in software.
    @Test(arguments: GPIODAPI.allCases)
    func theKernelDebouncesInputsWhereTheAPIHasIt(_ api: GPIODAPI) throws {
        try fake.run {
            let chip = try finder(api).chip(labelled: "latchkey-hil")
            let lines: [AnyObject] = [
                try chip.requestInput("door", GPIOLineConfig(consumer: "c", debounce: .milliseconds(20))),
                try chip.requestOutput("latch", GPIOLineConfig(consumer: "c", debounce: .milliseconds(20))),
            ]
            defer { withExtendedLifetime(lines) {} }
            switch api {
            case .v1:
                #expect(!chip.debouncesInputs)
                #expect(fake.held.map(\.debounceMicroseconds) == [nil, nil])
            case .v2:
                #expect(chip.debouncesInputs)
                #expect(fake.held.map(\.debounceMicroseconds) == [20_000, 0], "outputs are never debounced")
                #expect(fake.held.first?.monotonicClock == true, "event times on the loop's clock")
            }
        }
    }

    /// v2 events carry the kernel's CLOCK_MONOTONIC stamp (the loop's clock; never later than
    /// the read); v1's event time is the loop's clock when it is read.
    @Test(arguments: GPIODAPI.allCases)
    func anEdgeCarriesTheKernelsTimestampWhereTheAPIGivesIt(_ api: GPIODAPI) throws {
        try fake.run {
            let chip = try finder(api).chip(labelled: "latchkey-hil")
            let door = try chip.requestInput("door", GPIOLineConfig(consumer: "c"))
            var times: [Instant] = []
            door.onEdge = { times.append($0.time) }
            let before = loop.now
            fake.drive("door", high: true, at: UInt64(before.nanoseconds - 7_000_000))
            fake.drive("door", high: false, at: UInt64.max / 2)  // a stamp from the future is capped at now
            #expect(try loop.run(until: { times.count == 2 }, timeout: .seconds(5)))
            let after = loop.now
            switch api {
            case .v1:
                #expect(times.allSatisfy { $0 >= before && $0 <= after })
            case .v2:
                #expect(times.first == Instant(nanoseconds: before.nanoseconds - 7_000_000))
                #expect(times.last.map { $0 >= before && $0 <= after } == true)
            }
        }
    }

    @Test(arguments: GPIODAPI.allCases)
    func aLineHeldByAnotherConsumerIsBusyAndNamesGpioinfo(_ api: GPIODAPI) throws {
        try fake.run {
            fake.heldElsewhere = ["latch"]
            let chip = try finder(api).chip(labelled: "latchkey-hil")
            let error = #expect(throws: GPIOError.self) { _ = try chip.requestOutput("latch", GPIOLineConfig(consumer: "c")) }
            #expect(error?.code == .lineBusy)
            #expect(error?.line == "latch")
            #expect(error?.detail == "another consumer holds it (see gpioinfo)")
            #expect(fake.held.isEmpty)
        }
    }

    @Test(arguments: GPIODAPI.allCases)
    func aFailedEventReadStopsWatchingAndIsReported(_ api: GPIODAPI) throws {
        var reported: [GPIOError] = []
        let function = api == .v1 ? "gpiod_line_event_read_fd" : "gpiod_line_request_read_edge_events"
        let mock = SyscallMock()
        mock.fail(function, with: Errno(rawValue: 5))  // EIO
        try fake.run {
            try SyscallMock.with(mock) {
                let chip = try finder(api, onError: { reported.append($0) }).chip(labelled: "latchkey-hil")
                let door = try chip.requestInput("door", GPIOLineConfig(consumer: "c"))
                var edges = 0
                door.onEdge = { _ in edges += 1 }
                fake.drive("door", high: true)
                #expect(try loop.run(until: { !reported.isEmpty }, timeout: .seconds(5)))
                fake.drive("door", high: false)
                _ = try loop.run(until: { edges > 0 }, timeout: .milliseconds(50))
                #expect(edges == 0, "the input's fd is no longer watched")
                #expect(reported.first?.line == "door")
                #expect(reported.first?.detail == "\(function); edges of this input are no longer read")
            }
        }
    }

    /// A v2 request is its own object: released when the line object goes away, so the line
    /// is free again. (A v1 line belongs to its chip and goes with it.)
    @Test func aLibgpiod2RequestIsReleasedWithItsLine() throws {
        try fake.run {
            let chip = try finder(.v2).chip(labelled: "latchkey-hil")
            var door: (any GPIOInput)? = try chip.requestInput("door", GPIOLineConfig(consumer: "c"))
            #expect(door != nil && fake.held.count == 1)
            door = nil
            #expect(fake.held.isEmpty)
            let again = try chip.requestInput("door", GPIOLineConfig(consumer: "c"))
            #expect(fake.held.count == 1)
            withExtendedLifetime(again) {}
        }
    }
}
