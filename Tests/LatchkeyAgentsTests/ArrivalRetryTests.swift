import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import Testing

/// An arrival unlock that meets a moving bolt (docs/LOCK-RULES.md rule 4): the lock refuses
/// it as busy, deciding nothing; the phone asks once more when the bolt is at rest, and the
/// cycle is spent by that answer — still one unlock per away→home cycle.
struct ArrivalRetryTests {
    /// A motor lock (3 s per movement, no bolt sensors) whose owner comes home while it is
    /// locking behind them: the departure lock is still running when the phone re-links.
    @Test func anArrivalThatMeetsAMovingBoltIsAskedAgainOnceTheBoltRests() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100, actuator: .motor(runTime: .seconds(3)))
        #expect(w.advance(until: { w.lock.controller.lockState == .locked }, limit: .seconds(5)), "resolved at start")
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(6)))

        // First trip home: unlocked, the cycle spent.
        w.comeHome()
        #expect(w.advance(until: { w.lock.controller.lockState == .unlocked && w.phone.presence == .home }, limit: .seconds(6)))

        // The owner leaves; the lock locks behind them (3 s of motor) and they turn back.
        w.walkPhone(to: 100)
        #expect(w.advance(until: { w.lock.controller.machine.isMoving && w.phone.presence == .away }, limit: .seconds(12)))
        let events = w.phoneEvents.events.count
        w.comeHome()
        #expect(w.advance(until: { w.phoneEvents.names().dropFirst(events).contains(EventKind.phoneArrivalBusy.name) },
                          limit: .seconds(3)), "refused as busy, not by policy")
        #expect(w.lock.controller.machine.isMoving)
        #expect(w.phone.presence == .arriving, "the cycle is not spent")

        // The bolt arrives, the lock notifies it, the phone asks again: unlocked.
        #expect(w.advance(until: { w.lock.controller.lockState == .unlocked }, limit: .seconds(8)))
        #expect(w.advance(until: { w.phone.presence == .home }, limit: .seconds(1)))
        let later = Array(w.phoneEvents.events.dropFirst(events))
        #expect(later.first { $0.name == EventKind.phoneArrivalRetry.name }?.field("reason") == "bolt at rest")
        #expect(!later.contains { $0.name == EventKind.phoneArrivalRefused.name })
        let requests = later.filter { $0.name == EventKind.phoneCommandSent.name && $0.field("op") == "arrival-unlock" }
        #expect(requests.count == 2, "the request and its one retry")
        #expect(w.phoneStore.state?.presence.spentCycle == 2)

        // Home: a flap asks for nothing more.
        w.walkPhone(to: 100)
        #expect(w.advance(until: { !w.phone.isLinked }, limit: .seconds(3)))
        w.walkPhone(to: 2)
        #expect(w.advance(until: { w.phone.isLinked }, limit: .seconds(3)))
        w.loop.advance(by: .seconds(5))
        #expect(w.phoneEvents.events.dropFirst(events).filter { $0.name == EventKind.phoneArrivalRequest.name }.count == 1)
    }
}
