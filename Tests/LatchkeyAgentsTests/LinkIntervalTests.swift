import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyPhoneAgent
import LatchkeySim
import LatchkeyTransport
import Testing

/// The idle link's slow interval (`LinkIntervalGovernor`) on the simulated radio, which
/// charges the LE Connection Update what a controller does: its PDU at the next event, the
/// new interval from an instant six events later. The `interval-figure:` lines are the
/// figures docs/ARCHITECTURE.md quotes ("Link to unlock").
struct LinkIntervalTests {
    static let fast = Duration.microseconds(7_500)
    static let slow = Duration.milliseconds(50)

    func atHome() throws -> AgentWorld {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 2, phoneIdleInterval: Self.slow)
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(3)))
        #expect(w.linkSetUp())
        return w
    }

    /// The interval the lock's end of the link runs at.
    func lockSide(_ w: AgentWorld) -> Duration? { w.air.device(w.lockAddress)?.connectedLinks.first?.connectionInterval }

    func command(_ w: AgentWorld, _ op: LockOperation) throws -> (held: Bool, toLock: Duration) {
        let t = w.loop.now
        var result: Result<Void, PhoneAgent.CommandError>?
        w.phone.perform(op) { result = $0 }
        #expect(w.advance(until: { result != nil }, limit: .seconds(2)))
        let started = try #require(w.phoneEvents.events.last { $0.name == EventKind.phoneCommandStarted.name && $0.time >= t })
        let accepted = try #require(w.lockEvents.events.last {
            $0.name == EventKind.lockCommandAccepted.name && $0.field("op") == "\(op)" && $0.time >= t
        })
        return (started.field("challenge") == "held", accepted.time - started.time)
    }

    @Test func aWarmCommandFindsTheLinkFastAndAnIdleOneSlowsDown() throws {
        let w = try atHome()
        w.loop.advance(by: .seconds(2))
        let warm = try command(w, .unlock)
        #expect(warm.held && warm.toLock <= Self.fast, "\(warm)")
        #expect(lockSide(w) == Self.fast)
        // Five seconds of nothing: the update, at the next event, takes effect six later.
        let answered = w.loop.now
        #expect(w.advance(until: { lockSide(w) == Self.slow }, limit: .seconds(7)))
        let slowedAfter = w.loop.now - answered
        #expect(slowedAfter > .seconds(5) && slowedAfter <= .seconds(5) + .milliseconds(100), "\(slowedAfter)")
        #expect(w.phoneEvents.events.contains { $0.name == EventKind.phoneLinkInterval.name && $0.field("why") == "idle" })
        print("interval-figure: idle link slowed to \(Self.slow.milliseconds) ms \(slowedAfter.milliseconds) ms after "
              + "the last answer; a warm command before it: start → lock \(warm.toLock.milliseconds) ms")
    }

    @Test func aCommandOnASlowedLinkGoesAtOnceAndTheFastIntervalFollows() throws {
        let w = try atHome()
        #expect(w.advance(until: { lockSide(w) == Self.slow }, limit: .seconds(7)))
        w.loop.advance(by: .seconds(10) + .milliseconds(13))
        let t = w.loop.now
        let idle = try command(w, .unlock)
        // The held challenge ended long ago: read, answer, write, at the slow interval.
        #expect(!idle.held && idle.toLock > Self.slow * 2 && idle.toLock <= Self.slow * 3, "\(idle)")
        #expect(w.advance(until: { lockSide(w) == Self.fast }, limit: .seconds(1)))
        let fastAgain = w.loop.now - t
        // The update's PDU goes with the command's first event; its instant six slow events on.
        #expect(fastAgain > Self.slow * 6 && fastAgain <= Self.slow * 7, "\(fastAgain)")
        w.loop.advance(by: .milliseconds(500))
        let next = try command(w, .lock)
        #expect(next.held && next.toLock <= Self.fast, "\(next)")
        print("interval-figure: a command on the idle \(Self.slow.milliseconds) ms link: start → lock "
              + "\(idle.toLock.milliseconds) ms (at 7.5 ms it would be 15–22.5 ms); fast again \(fastAgain.milliseconds) ms "
              + "after it (waiting for that first would put the command behind it); the next command: "
              + "\(next.toLock.milliseconds) ms")
    }
}
