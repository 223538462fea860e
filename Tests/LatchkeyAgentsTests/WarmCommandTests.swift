import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyPhoneAgent
import LatchkeySim
import LatchkeyTransport
import Testing

/// A command on a warm link (linked, set up, a command answered before it) is one ATT round
/// trip: the phone read the next challenge ahead once the previous command was answered, so
/// its sealed write goes at the next connection event (docs/ARCHITECTURE.md, "Link to
/// unlock"). After the held challenge's end it reads a fresh one first, as every command did.
struct WarmCommandTests {
    static let interval = Duration.microseconds(7_500)

    /// The owner at home: linked, set up, its `present` answered and the next challenge read.
    func warmLink() throws -> AgentWorld {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 2)
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(3)))
        #expect(w.linkSetUp())
        w.loop.advance(by: .milliseconds(100))
        #expect(w.phone.central.connectionInterval == Self.interval)
        return w
    }

    /// Runs `op` from now: the phone's `command_started` event and the time from it to the
    /// lock's acceptance.
    func command(_ w: AgentWorld, _ op: LockOperation) throws -> (started: AgentEvent, toLock: Duration) {
        let t = w.loop.now
        var result: Result<Void, PhoneAgent.CommandError>?
        w.phone.perform(op) { result = $0 }
        #expect(w.advance(until: { result != nil }, limit: .seconds(2)))
        if case .failure(let e)? = result { Issue.record("\(op) failed: \(e)") }
        let started = try #require(w.phoneEvents.events.last { $0.name == EventKind.phoneCommandStarted.name && $0.time >= t })
        let accepted = try #require(w.lockEvents.events.last {
            $0.name == EventKind.lockCommandAccepted.name && $0.field("op") == "\(op)" && $0.time >= t
        })
        return (started, accepted.time - started.time)
    }

    @Test func aWarmCommandReachesTheLockAtTheNextConnectionEvent() throws {
        let w = try warmLink()
        // Commands one after another, at times that fall anywhere between two events.
        for (i, op) in [LockOperation.unlock, .lock, .unlock].enumerated() {
            w.loop.advance(by: .microseconds(1_300 + 2_000 * Int64(i)) + .milliseconds(500))
            let (started, toLock) = try command(w, op)
            #expect(started.field("challenge") == "held", "command \(i): \(started)")
            #expect(toLock > .zero && toLock <= Self.interval, "command \(i): start → lock \(toLock)")
        }
    }

    @Test func aCommandAfterTheHeldChallengesEndReadsAFreshOneFirst() throws {
        let w = try warmLink()
        // The challenge was read ahead after `present`; five seconds on, the lock would refuse it.
        w.loop.advance(by: .seconds(5))
        let (started, toLock) = try command(w, .unlock)
        #expect(started.field("challenge") == nil)
        #expect(w.phoneEvents.names().contains(EventKind.phoneHeldChallengeExpired.name))
        // The read (an event), its answer (the next), the write (the one after): 2–3 intervals.
        #expect(toLock > Self.interval * 2 && toLock <= Self.interval * 3, "start → lock \(toLock)")
        // And the next one is warm again.
        w.loop.advance(by: .milliseconds(500))
        #expect(try command(w, .lock).started.field("challenge") == "held")
    }

    @Test func aCommandSentAsTheBoltReportsWaitsForTheChallengeReadThen() throws {
        let w = try warmLink()
        // After a command that moves the bolt, the phone reads ahead only once the lock reports
        // the bolt at rest (a lock dying mid-movement would lose the read); a command the app
        // sends at that very moment waits for the read, under its own timeout.
        var next: Result<Void, PhoneAgent.CommandError>?
        var sent = false
        w.phone.onStatus = { frame in
            guard frame.lockState == 2, !sent else { return }  // Matter LockState: Unlocked
            sent = true
            w.phone.perform(.lock) { next = $0 }
        }
        _ = try command(w, .unlock)
        #expect(w.advance(until: { next != nil }, limit: .seconds(2)))
        if case .failure(let e)? = next { Issue.record("the lock failed: \(e)") }
        let started = try #require(w.phoneEvents.events.last { $0.name == EventKind.phoneCommandStarted.name })
        #expect(started.field("op") == "lock" && started.field("challenge") == "ahead")
    }

    @Test func aLockThatForgotTheHeldChallengeGetsTheCommandOnceMoreAfterAFreshRead() throws {
        let w = try warmLink()
        // The lock dies and comes back within the 2 s its controller keeps the link: it adopts
        // the link, and its challenges died with it.
        w.killLock()
        w.loop.advance(by: .milliseconds(200))
        try w.restartLock()
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockRestored.name) }, limit: .seconds(2)))
        w.loop.advance(by: .milliseconds(300))
        let rejectedBefore = w.lockEvents.events.filter { $0.name == EventKind.lockCommandRejected.name }.count
        let (started, _) = try command(w, .unlock)
        #expect(started.field("challenge") == nil, "the second start, with a fresh read")
        #expect(w.phoneEvents.names().contains(EventKind.phoneHeldChallengeRefused.name))
        let rejected = w.lockEvents.events.filter { $0.name == EventKind.lockCommandRejected.name }.dropFirst(rejectedBefore)
        #expect(rejected.map { $0.field("reason") } == ["stale challenge"])
        #expect(w.latchEnergised)
    }
}
