import LatchkeySim
import LatchkeyTransport
import Testing

/// The link model's charges, pinned: the link-layer setup before the first ATT PDU, one
/// connection event per PDU hop (a request and its answer: two), and no more PDUs in one
/// event than the controllers' buffers and the airtime before the next anchor allow.
@Suite struct LinkLayerTimingTests {
    static let fast = ConnectionParameters(connectionInterval: .microseconds(7_500), supervisionTimeout: .milliseconds(420))

    @Test func theFirstATTPDUWaitsForTheFeatureExchange() throws {
        let world = try World.linked()
        #expect(LinkLayerTiming.setupEvents == 2)
        #expect(world.phoneLink.send([0x02, 0xF7, 0x00]) == .sent)  // Exchange MTU, at once on link-up
        world.loop.advance(to: world.event(2))
        #expect(world.lockApp.received.isEmpty, "events 1 and 2 carry LL_FEATURE_REQ and LL_FEATURE_RSP")
        world.loop.advance(to: world.event(3))
        #expect(world.lockApp.received.map(\.time) == [world.event(3)])
    }

    @Test func aRequestAndItsAnswerCostTwoConnectionEvents() throws {
        let world = try World.linked()
        world.lockApp.onReceive = { link, pdu in _ = link.send([pdu[0] + 1]) }  // answers at once
        world.loop.advance(to: world.event(5) + .milliseconds(3))
        #expect(world.phoneLink.send([0x0A, 0x10, 0x00]) == .sent)
        world.loop.advance(by: .seconds(1))
        #expect(world.lockApp.received.map(\.time) == [world.event(6)])
        #expect(world.phoneApp.received.map(\.time) == [world.event(7)], "the answer is not ready within T_IFS")
        #expect(world.phoneApp.receivedPDUs == [[0x0B]])
    }

    @Test func theAnchorFollowsTheIntervalTheCentralAskedFor() throws {
        let world = try World.linked(parameters: Self.fast)
        #expect(world.phoneLink.connectionInterval == .microseconds(7_500))
        #expect(world.lockLink.connectionInterval == .microseconds(7_500))
        #expect(world.phoneLink.send([1]) == .sent)
        world.loop.advance(by: .milliseconds(100))
        #expect(world.lockApp.received.map(\.time) == [world.anchor + .microseconds(7_500) * 3])
    }

    @Test func fullSizedPDUsAreBoundByAirtimeAtAShortInterval() throws {
        let world = try World.linked(parameters: Self.fast)
        let interval = Duration.microseconds(7_500)
        // 247-byte PDUs: 2,088 µs each on the 1M PHY, +150 µs, +80 µs empty answer, +150 µs.
        // Two such exchanges fit in 7.5 ms less T_IFS; a third would end at 7,404 µs.
        for i in 0..<6 { #expect(world.phoneLink.send([UInt8(i)] + Array(repeating: 0, count: 246)) == .sent) }
        world.loop.advance(by: .milliseconds(100))
        let first = world.anchor + interval * 3
        #expect(world.lockApp.received.map(\.time)
                    == [first, first, first + interval, first + interval, first + interval * 2, first + interval * 2])
        #expect(world.lockApp.receivedPDUs.map { $0[0] } == [0, 1, 2, 3, 4, 5], "in order")
    }

    @Test func shortPDUsAreBoundByTheControllersBuffers() throws {
        let world = try World.linked(parameters: Self.fast)
        for i in 0..<6 { #expect(world.phoneLink.send([0x1B, UInt8(i), 0, 1, 2]) == .sent) }
        world.loop.advance(by: .milliseconds(100))
        let first = world.anchor + .microseconds(7_500) * 3
        #expect(world.lockApp.received.map(\.time) == Array(repeating: first, count: 4)
                    + Array(repeating: first + .microseconds(7_500), count: 2))
    }

    @Test func bothDirectionsShareAnEventsExchanges() throws {
        let world = try World.linked(parameters: Self.fast)
        let full = Array(repeating: UInt8(0), count: 247)
        // A full PDU each way per exchange: 2 × 2,088 + 2 × 150 = 4,476 µs; one exchange fits.
        for _ in 0..<2 {
            #expect(world.phoneLink.send(full) == .sent)
            #expect(world.lockLink.send(full) == .sent)
        }
        world.loop.advance(by: .milliseconds(100))
        let first = world.anchor + .microseconds(7_500) * 3
        #expect(world.lockApp.received.map(\.time) == [first, first + .microseconds(7_500)])
        #expect(world.phoneApp.received.map(\.time) == [first, first + .microseconds(7_500)])
    }
}
