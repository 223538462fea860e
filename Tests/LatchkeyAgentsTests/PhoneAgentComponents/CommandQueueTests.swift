import LatchkeyLockProtocol
@testable import LatchkeyPhoneAgent
import Testing

/// The command queue alone: order, one in flight under its timeout, a refused command never
/// takes the ones behind it along, the sending again after a held challenge's refusal.
struct CommandQueueTests {
    typealias Outcome = Result<Void, PhoneAgent.CommandError>

    /// Why `outcome` failed; nil for a success or none.
    static func failure(_ outcome: Outcome?) -> PhoneAgent.CommandError? {
        if case .failure(let e)? = outcome { e } else { nil }
    }

    final class Rig {
        let rig = PhoneComponentRig()
        var timeouts = 0
        var outcomes: [String: Outcome] = [:]
        lazy var queue = CommandQueue(loop: rig.loop, timeout: .seconds(5)) { [unowned self] in self.timeouts += 1 }
        func add(_ name: String, _ op: LockOperation, mode: UInt8? = nil) {
            queue.append(op, mode: mode) { [unowned self] in self.outcomes[name] = $0 }
        }
    }

    @Test func commandsGoOneAtATimeInOrder() {
        let r = Rig()
        #expect(r.queue.isIdle && r.queue.start() == nil)
        r.add("a", .unlock)
        r.add("b", .setOperatingMode, mode: 2)
        let a = r.queue.start()
        #expect(a?.operation == .unlock && a?.awaitingChallenge == true && r.queue.start() == nil)
        #expect(r.queue.finish(.success(())))
        let b = r.queue.start()
        #expect(b?.operation == .setOperatingMode && b?.mode == 2)
        #expect(r.queue.finish(.success(())) && r.queue.isIdle && !r.queue.finish(.success(())))
        #expect(r.outcomes.count == 2 && r.rig.loop.pendingCount == 0)
    }

    @Test func aRefusedCommandLeavesTheNextOneWaitingAndItGoes() {
        let r = Rig()
        r.add("arrival", .arrivalUnlock)
        r.add("lock", .lock)
        _ = r.queue.start()
        r.queue.finish(.failure(.rejected(.busy)))
        #expect(Self.failure(r.outcomes["arrival"]) == .rejected(.busy) && r.outcomes["lock"] == nil)
        #expect(!r.queue.isIdle && r.queue.start()?.operation == .lock)
        r.queue.finish(.success(()))
        #expect(r.outcomes["lock"] != nil && Self.failure(r.outcomes["lock"]) == nil)
    }

    @Test func theTimeoutCountsFromTheStartAndTheAnswerDisarmsIt() {
        let r = Rig()
        r.add("a", .unlock)
        r.rig.loop.advance(by: .seconds(10))  // waiting for the link is not timed
        #expect(r.timeouts == 0)
        _ = r.queue.start()
        r.rig.loop.advance(by: .seconds(5) - .milliseconds(1))
        #expect(r.timeouts == 0)
        r.rig.loop.advance(by: .milliseconds(1))
        #expect(r.timeouts == 1 && r.queue.current?.operation == .unlock)  // the coordinator decides
        r.add("b", .lock)
        r.queue.finish(.failure(.notDelivered("timeout")))
        _ = r.queue.start()
        r.queue.finish(.success(()))
        r.rig.loop.advance(by: .seconds(10))
        #expect(r.timeouts == 1)
    }

    @Test func aCommandSentAgainGoesFirstAndKeepsItsCaller() {
        let r = Rig()
        r.add("a", .unlock)
        r.add("b", .lock)
        _ = r.queue.start()
        r.queue.sealedWithHeldChallenge()
        #expect(r.queue.current?.usedHeldChallenge == true && r.queue.current?.retried == false)
        r.queue.sendAgain(retried: true)
        #expect(r.queue.current == nil && r.rig.loop.pendingCount == 0)
        let again = r.queue.start()
        #expect(again?.operation == .unlock && again?.retried == true && again?.usedHeldChallenge == false)
        r.queue.sendAgain(retried: false)  // a stale cache: retried stays as it was
        #expect(r.queue.start()?.retried == true)
        r.queue.finish(.success(()))
        #expect(r.outcomes.keys.sorted() == ["a"])
    }

    @Test func theReadAheadAndTheChallengeMarkTheCommandInFlight() {
        let r = Rig()
        #expect(!r.queue.readAheadArrived() && r.queue.challengeArrived() == nil)
        r.add("a", .unlock)
        _ = r.queue.start()
        r.queue.waitForReadAhead()
        #expect(r.queue.current?.awaitingReadAhead == true)
        #expect(r.queue.readAheadArrived() && !r.queue.readAheadArrived())
        #expect(r.queue.challengeArrived()?.awaitingChallenge == false)
    }

    @Test func aLostLinkFailsEveryCommandOnceTheOneInFlightFirst() {
        let r = Rig()
        var order: [String] = []
        for name in ["a", "b", "c"] {
            r.queue.append(.unlock, mode: nil) { outcome in
                order.append(name)
                #expect(Self.failure(outcome) == .notDelivered("link lost"))
            }
        }
        _ = r.queue.start()
        r.queue.failAll("link lost")
        r.queue.failAll("link lost")
        #expect(order == ["a", "b", "c"] && r.queue.isIdle && r.rig.loop.pendingCount == 0)
    }
}
