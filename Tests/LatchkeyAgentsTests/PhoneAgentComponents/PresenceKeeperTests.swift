import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyPhone
@testable import LatchkeyPhoneAgent
import LatchkeyTransport
import Testing

/// Presence and the arrival request alone: the timers the presence machine asks for, on a
/// manual clock; the arrival request only inside an intent's window, asked again once after a
/// moving bolt; the counter durable before it is used.
struct PresenceKeeperTests {
    static let configuration = PhoneAgentConfiguration(lockAddress: BluetoothAddress(0xA1), keyID: 1,
                                                       secret: Array(repeating: 1, count: 32))

    final class Rig {
        let rig = PhoneComponentRig()
        let store: any PhoneStateStore
        var asked: [UInt64] = []
        lazy var keeper = PresenceKeeper(restoring: try? store.load(), store: store,
                                         configuration: PresenceKeeperTests.configuration,
                                         events: rig.output) { [unowned self] in self.asked.append($0) }
        init(store: any PhoneStateStore = InMemoryPhoneStateStore()) { self.store = store }

        /// Home, then the link gone for the grace period: away in cycle 1.
        func away() {
            keeper.feed(.linkVerified)
            keeper.feed(.linkDown)
            rig.loop.advance(by: PresenceKeeperTests.configuration.gracePeriod)
        }
        /// Away, an intent, the link back: the arrival request of cycle 1 met a moving bolt.
        func arrivingToAMovingBolt() {
            away()
            _ = keeper.arrivalIntent()
            keeper.feed(.linkVerified)
            keeper.arrivalAnswered(1, .failure(.rejected(.busy)))
        }
        func events(_ kind: EventKind) -> [AgentEvent] { rig.sink.events.filter { $0.name == kind.name } }
    }

    @Test func theLinkMustStayDownForTheGracePeriod() {
        let r = Rig()
        r.keeper.feed(.linkVerified)
        r.keeper.feed(.linkDown)
        r.rig.loop.advance(by: Self.configuration.gracePeriod - .milliseconds(1))
        #expect(r.keeper.current.presence.presence == .leaving)
        r.rig.loop.advance(by: .milliseconds(1))
        #expect(r.keeper.current.presence.presence == .away && r.events(.phoneAway).count == 1)
        let said = r.events(.phonePresence).map { "\($0.field("from") ?? "")>\($0.field("to") ?? "")" }
        #expect(said == ["unknown>home", "home>leaving", "leaving>away"])
    }

    @Test func aReLinkWithoutAnIntentNeverAsks() {
        let r = Rig()
        r.away()
        r.keeper.feed(.linkVerified)
        r.rig.loop.advance(by: Self.configuration.nearbyLimit)
        #expect(r.asked.isEmpty && r.keeper.current.presence.presence == .home)
        #expect(r.events(.phoneHomeWithoutArrival).first?.field("nearby_seconds") == "120")
    }

    @Test func anIntentOpensAWindowForOneRequest() {
        let r = Rig()
        r.away()
        #expect(r.keeper.arrivalIntent() == "window open for 120 s")
        r.keeper.feed(.linkVerified)
        #expect(r.asked == [1] && r.events(.phoneArrivalRequest).count == 1)
        r.keeper.arrivalAnswered(1, .success(()))
        #expect(r.keeper.current.presence.presence == .home)
        #expect(r.events(.phoneHome).first?.field("unlocked") == "true")
        #expect(r.rig.loop.pendingCount == 0)
    }

    @Test func anExpiredIntentAsksNothing() {
        let r = Rig()
        r.away()
        _ = r.keeper.arrivalIntent()
        r.rig.loop.advance(by: Self.configuration.arrivalIntentWindow)
        r.keeper.feed(.linkVerified)
        #expect(r.asked.isEmpty && r.events(.phoneArrivalIntentExpired).count == 1)
    }

    static func status(_ lockState: UInt8) -> LockStatusFrame {
        LockStatusFrame(lockState: lockState, doorState: 1, operatingMode: 0, actuatorEnabled: true, lastEventSequence: 1)
    }

    @Test func aBusyAnswerAsksOnceMoreWhenTheBoltRests() {
        let r = Rig()
        r.arrivingToAMovingBolt()
        r.keeper.retryArrivalIfTheBoltRests(Self.status(0x80))
        #expect(r.asked == [1])  // still moving
        r.keeper.retryArrivalIfTheBoltRests(Self.status(1))
        #expect(r.asked == [1, 1] && r.events(.phoneArrivalRetry).first?.field("reason") == "bolt at rest")
        r.keeper.arrivalAnswered(1, .failure(.rejected(.busy)))
        r.rig.loop.advance(by: Self.configuration.arrivalRetryWait)
        #expect(r.asked == [1, 1], "asked again once only")
    }

    @Test func aBusyAnswerAsksOnceMoreWhenTheWaitEndsUnlessTheLinkWent() {
        let r = Rig()
        r.arrivingToAMovingBolt()
        r.rig.loop.advance(by: Self.configuration.arrivalRetryWait)
        #expect(r.asked == [1, 1] && r.events(.phoneArrivalRetry).first?.field("reason") == "wait over")
        let lost = Rig()
        lost.arrivingToAMovingBolt()
        lost.keeper.cancelArrivalRetry()
        lost.rig.loop.advance(by: Self.configuration.arrivalRetryWait)
        #expect(lost.asked == [1] && lost.events(.phoneArrivalRetry).isEmpty)
    }

    @Test func theCounterIsSavedBeforeItIsUsedAndARestartResumesAsAway() throws {
        let store = InMemoryPhoneStateStore()
        let r = Rig(store: store)
        r.away()
        _ = r.keeper.arrivalIntent()
        r.keeper.feed(.linkVerified)  // arriving when it dies
        #expect(r.keeper.nextCounter() == 1 && r.keeper.nextCounter() == 2)
        #expect(store.state?.counter == 2)
        let restarted = Rig(store: store)
        #expect(restarted.keeper.current.counter == 2 && restarted.keeper.current.presence.presence == .away)
    }

    final class FailingStore: PhoneStateStore {
        struct Full: Error {}
        func load() throws -> PhoneState? { nil }
        func save(_ state: PhoneState) throws { throw Full() }
    }

    @Test func aSaveThatFailsIsSaidAndItsCounterIsNotHandedOut() {
        let r = Rig(store: FailingStore())
        // A counter that is not on disk would be sent again after a restart: none is given.
        #expect(r.keeper.nextCounter() == nil)
        #expect(r.events(.phonePersistFailed).count == 1)
        #expect(r.keeper.nextCounter() == nil && r.keeper.current.counter == 2, "nor used again in this life")
    }

    @Test func aSpellOfRefusedSavesIsSaidOnceWhenItStartsAndOnceWhenASaveWorks() throws {
        let store = InMemoryPhoneStateStore()
        store.refusal = FailingStore.Full()
        let r = Rig(store: store)
        #expect(r.keeper.nextCounter() == nil && r.keeper.storeRefusing)
        r.rig.loop.advance(by: .seconds(90))
        r.keeper.feed(.linkVerified)  // a change of presence, refused too
        #expect(!r.keeper.saveAgain())
        #expect(store.refused == 3 && r.events(.phonePersistFailed).count == 1)
        #expect(r.events(.phonePersistFailed).first?.field("error") == "\(FailingStore.Full())")
        store.refusal = nil
        r.rig.loop.advance(by: .seconds(30))
        #expect(r.keeper.saveAgain() && !r.keeper.storeRefusing && store.state == r.keeper.current)
        let recovered = try #require(r.events(.phonePersistRecovered).first)
        #expect(recovered.field("refused") == "3" && recovered.field("seconds") == "120")
        #expect(r.keeper.nextCounter() == 2 && r.events(.phonePersistRecovered).count == 1)
        store.refusal = FailingStore.Full()
        #expect(r.keeper.nextCounter() == nil && r.events(.phonePersistFailed).count == 2, "a new spell is said again")
    }
}
