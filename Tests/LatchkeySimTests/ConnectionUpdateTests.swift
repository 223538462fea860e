import LatchkeySim
import LatchkeyTransport
import Testing

/// The LE Connection Update on the simulated radio, pinned: the central's
/// LL_CONNECTION_UPDATE_IND goes at the next event (one even on an idle link), the old interval
/// runs until the instant six events later, and the new one from there, for both ends.
@Suite struct ConnectionUpdateTests {
    static let fast = ConnectionParameters(connectionInterval: .microseconds(7_500), supervisionTimeout: .milliseconds(420))
    static let interval = Duration.microseconds(7_500)

    /// The link's k-th event at 7.5 ms.
    func event(_ world: World, _ k: Int) -> Instant { world.anchor + Self.interval * k }

    @Test func theNewIntervalRunsFromTheInstantSixEventsAfterTheUpdatesEvent() throws {
        let world = try World.linked(parameters: Self.fast)
        world.loop.advance(to: event(world, 10) + .milliseconds(2))
        #expect(world.phoneLink.requestConnectionInterval(.milliseconds(50)))
        // The update goes at event 11; its instant is event 17; data sent meanwhile crosses on
        // the old grid, and the answer to it at the instant.
        world.lockApp.onReceive = { link, pdu in _ = link.send([pdu[0] + 1]) }
        world.loop.advance(to: event(world, 12) + .milliseconds(1))
        #expect(world.phoneLink.send([0x0A, 0x10, 0x00]) == .sent)
        world.loop.advance(to: event(world, 16))
        #expect(world.phoneLink.connectionInterval == Self.interval && world.lockLink.connectionInterval == Self.interval)
        world.loop.advance(to: event(world, 17))
        #expect(world.phoneLink.connectionInterval == .milliseconds(50))
        #expect(world.lockLink.connectionInterval == .milliseconds(50))
        #expect(world.lockApp.received.map(\.time) == [event(world, 13)])
        #expect(world.phoneApp.received.map(\.time) == [event(world, 14)])
        // From the instant on, events fall every 50 ms.
        world.loop.advance(to: event(world, 17) + .milliseconds(5))
        #expect(world.phoneLink.send([0x0A, 0x10, 0x00]) == .sent)
        world.loop.advance(by: .milliseconds(200))
        #expect(world.lockApp.received.map(\.time).last == event(world, 17) + .milliseconds(50))
        #expect(world.phoneApp.received.map(\.time).last == event(world, 17) + .milliseconds(100))
    }

    @Test func theUpdatesPDUTakesTheCentralsFirstPacketOfItsEvent() throws {
        let world = try World.linked(parameters: Self.fast)
        world.loop.advance(to: event(world, 10) + .milliseconds(2))
        // Four short PDUs fill an event's exchanges; with the update's PDU first, three go.
        for i in 0..<4 { #expect(world.phoneLink.send([0x1B, UInt8(i), 0, 1, 2]) == .sent) }
        #expect(world.phoneLink.requestConnectionInterval(.milliseconds(30)))
        world.loop.advance(by: .milliseconds(30))
        #expect(world.lockApp.received.map(\.time) == Array(repeating: event(world, 11), count: 3) + [event(world, 12)])
    }

    @Test func onlyTheCentralMayUpdateAndOnlyToAnIntervalTheLinkSurvives() throws {
        let world = try World.linked(parameters: Self.fast)
        #expect(!world.lockLink.requestConnectionInterval(.milliseconds(50)), "the peripheral can only ask")
        #expect(!world.phoneLink.requestConnectionInterval(.milliseconds(5)), "below the Core's 7.5 ms")
        #expect(!world.phoneLink.requestConnectionInterval(.milliseconds(210)), "420 ms supervision: at most 2 intervals")
        world.loop.advance(by: .seconds(1))
        #expect(world.phoneLink.connectionInterval == Self.interval)
    }
}
