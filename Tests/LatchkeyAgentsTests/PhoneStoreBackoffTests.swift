import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyPhone
import LatchkeyPhoneAgent
import LatchkeyTransport
import Testing

/// The phone's store refuses writes (its disk full or read-only): no counter can be made
/// durable, so the phone cannot prove itself on a link and the lock drops each one after its
/// unauthenticated timeout. The phone must not link again and again for as long as the spell
/// lasts: it backs off, says so once, tries a save at once when its owner taps a command, and
/// links within one step of its back-off once the store takes writes again.
struct PhoneStoreBackoffTests {
    struct ReadOnly: Error, CustomStringConvertible {
        var description: String { "attempt to write a readonly database" }
    }

    /// The owner left (the lock saw it), the phone's disk went read-only, the owner walked
    /// back: the link that formed found the store refusing, and the lock dropped it.
    func refusingWorld() throws -> AgentWorld {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(10)))
        #expect(count(w, .phoneLinked) == 1, "the link it left on")
        w.phoneStore.refusal = ReadOnly()
        w.walkPhone(to: 2)
        #expect(w.advance(until: { count(w, .phonePresentFailed) == 1 }, limit: .seconds(5)))
        #expect(w.advance(until: { !w.phone.isLinked }, limit: .seconds(10)), "the lock drops a link with no key proven")
        #expect(count(w, .phoneLinked) == 2)
        return w
    }

    func count(_ w: AgentWorld, _ kind: EventKind) -> Int { w.phoneEvents.names().filter { $0 == kind.name }.count }
    /// The links since the phone's store began to refuse (the first: the link it left on).
    func links(_ w: AgentWorld) -> Int { count(w, .phoneLinked) - 1 }
    func lockCount(_ w: AgentWorld, _ kind: EventKind) -> Int { w.lockEvents.names().filter { $0 == kind.name }.count }

    @Test func whileTheStoreRefusesThePhoneDoesNotLinkAgainAndAgain() throws {
        let w = try refusingWorld()
        w.loop.advance(by: .seconds(10 * 60))
        // Without the back-off: a link every 5 to 6 s, each with its failed saves and events.
        #expect(links(w) == 1, "no link after the one that found the store refusing")
        #expect(w.lockEvents.names().filter { $0 == EventKind.lockPhonePresent.name }.count == 1, "only before the spell")
        #expect(w.phoneStore.refused <= 12, "a save at each step (5 s doubling to 5 min) and the link's own")
        #expect(count(w, .phonePersistFailed) == 1 && count(w, .phonePresentFailed) == 1, "said once")
        #expect(count(w, .phonePersistRecovered) == 0 && !w.phone.isLinked)
    }

    @Test func aTapDuringTheBackoffTriesASaveAtOnce() throws {
        let w = try refusingWorld()
        w.loop.advance(by: .seconds(60))  // inside a step of 40 s or 80 s
        let refused = w.phoneStore.refused
        var result: Result<Void, PhoneAgent.CommandError>?
        w.phone.perform(.unlock) { result = $0 }
        // Answered now, not when a link would have formed: the owner knows the command did not go.
        guard case .failure(.notDelivered(let why))? = result else {
            Issue.record("the tap was not answered at once: \(String(describing: result))")
            return
        }
        #expect(why.hasPrefix("its counter could not be saved"))
        #expect(w.phoneStore.refused == refused + 1 && links(w) == 1)
        // The disk is back: the next tap saves, links at once and unlocks.
        w.phoneStore.refusal = nil
        result = nil
        w.phone.perform(.unlock) { result = $0 }
        #expect(count(w, .phonePersistRecovered) == 1)
        #expect(w.advance(until: { result != nil }, limit: .seconds(5)))
        guard case .success? = result else {
            Issue.record("the tap after the disk came back failed: \(String(describing: result))")
            return
        }
        #expect(w.latchEnergised && links(w) == 2)
    }

    @Test func thePhoneLinksWithinOneStepOnceTheStoreTakesWritesAgain() throws {
        let w = try refusingWorld()
        w.loop.advance(by: .seconds(10 * 60))
        let refused = w.phoneStore.refused
        w.phoneStore.refusal = nil
        let healed = w.loop.now
        let limit = w.phone.configuration.storeRetryLimit + .seconds(5)
        #expect(w.advance(until: { lockCount(w, .lockPhonePresent) == 2 }, limit: limit),
                "present on a new link within the back-off's longest step")
        #expect(w.loop.now - healed <= limit && links(w) == 2)
        let recovered = try #require(w.phoneEvents.events.first { $0.name == EventKind.phonePersistRecovered.name })
        #expect(recovered.field("refused") == "\(refused)")
        #expect(w.phone.state == w.phoneStore.state, "what the phone keeps is on disk again")
    }

    @Test func aDropAfterTheDiskCameBackWithNothingSavedSinceReLinksAtOnce() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 2)
        #expect(w.advance(until: { w.phone.isLinked && w.phone.presence == .home }, limit: .seconds(5)))
        // A tap whose counter the disk refused, on a link the lock keeps (its key proven on it).
        w.phoneStore.refusal = ReadOnly()
        var result: Result<Void, PhoneAgent.CommandError>?
        w.phone.perform(.unlock) { result = $0 }
        #expect(w.advance(until: { result != nil }, limit: .seconds(5)))
        #expect(count(w, .phonePersistFailed) == 1 && w.phone.isLinked)
        // The disk comes back; nothing is saved until the link drops.
        w.phoneStore.refusal = nil
        w.walkPhone(to: 100)
        #expect(w.advance(until: { !w.phone.isLinked }, limit: .seconds(10)))
        let links = count(w, .phoneLinked)
        w.walkPhone(to: 2)
        // Without asking the store first, the back-off's first step (5 s) would come between.
        #expect(w.advance(until: { count(w, .phoneLinked) == links + 1 }, limit: .seconds(2)))
        #expect(count(w, .phonePersistRecovered) == 1 && w.phoneStore.refused == 1)
    }
}
