import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySim
import Testing

/// The lock's own rules on an arrival unlock beyond the relay bounds (docs/SECURITY.md,
/// "Arrival unlock"): a departure it saw, once per departure, and a relock unless the door opens.
struct ArrivalLockRulesTests {
    static let noDeparture = ArrivalPolicy.Refusal.noDepartureSeen.rawValue

    /// A world whose owner left (the lock saw it) and came home with an intent: unlocked.
    func arrivedHome() throws -> AgentWorld {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(6)))
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised && w.phone.presence == .home }, limit: .seconds(3)))
        return w
    }

    func refusals(_ w: AgentWorld) -> [String] {
        w.lockEvents.events.filter { $0.name == EventKind.lockArrivalRefused.name }.compactMap { $0.field("reason") }
    }

    @Test func anArrivalWithoutADepartureTheLockSawIsRefused() throws {
        // The phone was never seen here (the lock restarted, say): away by its own account only.
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100, lockSawItLeave: false)
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(6)))
        w.comeHome()
        #expect(w.advance(until: { w.phone.presence == .home }, limit: .seconds(3)))
        #expect(refusals(w) == [Self.noDeparture])
        #expect(!w.latchEnergised)
    }

    @Test func oneArrivalPerDepartureWhateverThePhoneSends() throws {
        let w = try arrivedHome()
        #expect(w.command(.lock) == nil)
        #expect(w.advance(until: { w.lock.controller.lockState == .locked }, limit: .seconds(2)))
        // A second arrival command on the same departure, sealed and fresh, is refused.
        #expect(w.command(.arrivalUnlock) == .rejected(.refusedByPolicy))
        #expect(refusals(w) == [Self.noDeparture])
        #expect(w.lock.controller.lockState == .locked)
    }

    @Test func anArrivalUnlockRelocksUnlessTheDoorIsOpened() throws {
        let w = try arrivedHome()
        let wait = try #require(w.lock.configuration.arrivalPolicy.relockUnlessOpenedWithin)
        // Nobody opens the door (a relay's victim is not there): locked again after the wait.
        w.loop.advance(by: wait - .seconds(1))
        #expect(w.latchEnergised)
        #expect(w.advance(until: { w.lock.controller.lockState == .locked }, limit: .seconds(2)))
        #expect(w.lockEvents.names().contains(EventKind.lockArrivalRelock.name))

        // Next trip: the owner opens the door, so it stays as they left it (no auto-relock here).
        w.walkPhone(to: 100)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().filter { $0 == EventKind.lockDeparture.name }.count == 2 },
                          limit: .seconds(8)))
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
        w.loop.advance(by: .seconds(5))
        w.chip.pull("door", high: true)
        w.loop.advance(by: wait)
        #expect(w.latchEnergised && w.lock.controller.lockState == .unlocked)
        #expect(w.lockEvents.names().filter { $0 == EventKind.lockArrivalRelock.name }.count == 1)
    }

    @Test func theArrivalRelockDoesNotOverrideALaterDecision() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 100)
        let wait = try #require(w.lock.configuration.arrivalPolicy.relockUnlessOpenedWithin)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(6)))
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised && w.phone.presence == .home }, limit: .seconds(3)))
        // The owner locks and, later, unlocks by command: that unlock is theirs to keep.
        #expect(w.command(.lock) == nil)
        #expect(w.advance(until: { w.lock.controller.lockState == .locked }, limit: .seconds(2)))
        #expect(w.command(.unlock) == nil)
        w.loop.advance(by: wait)
        #expect(w.latchEnergised && w.lock.controller.lockState == .unlocked)
        #expect(!w.lockEvents.names().contains(EventKind.lockArrivalRelock.name))
    }
}
